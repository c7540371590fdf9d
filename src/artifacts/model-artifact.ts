/**
 * Turns the `url` of a load request into a model on local disk. SageMaker passes an already-extracted
 * directory (/opt/ml/models/<name>/model); a local .tar.gz is also accepted and extracted into a fresh
 * directory under the cache dir. Nothing remote is ever fetched.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { isMmeError, MmeError, quote } from '../errors';
import { ArchiveLimits, DEFAULT_ARCHIVE_LIMITS } from './extract-archive';
import { asyncReads, type DirReads } from './dir-reads';
import { extractInChild } from './extract-child';
import { errnoOf, fsFailure } from './fs-errors';
import { resolveModelDir, type ModelDir } from './model-dir';

export type { ArchiveLimits } from './extract-archive';

export interface ModelArtifact extends ModelDir {
  /** As the load request gave it. */
  url: string;
  /** Where an archive was extracted (removed by dispose()); null for a plain directory. */
  extractedTo: string | null;
  /** Removes the extraction directory, if any; safe to call more than once. */
  dispose(): Promise<void>;
  /** `err` with the model's directory shown as the url: a client sees the paths it sent, never the server's own. */
  hidePaths(err: unknown): unknown;
}

export interface ResolveArtifactOptions {
  /** Parent of the per-load extraction directories; created (mode 0700) if missing. */
  cacheDir: string;
  /** Directories the url must resolve into, links followed; omitted = anywhere. */
  roots?: readonly string[];
  /** What a relative url is resolved against (model_store, as MMS does); omitted = the working directory. */
  store?: string | null;
  handler?: string;
  limits?: ArchiveLimits;
  reads?: DirReads;
}

// A scheme with "//" (http://, s3://, file://) or one of the schemes people write without it.
const REMOTE_URL = /^(?:[a-z][a-z0-9+.-]*:\/\/|(?:https?|s3|file):)/i;
// Reading a device or a kernel file as a model can hang or leak host data (Triton refuses these too).
const SYSTEM_ROOTS = ['/dev', '/proc', '/sys'];
const ARCHIVE_NAME = /\.(?:tar\.gz|tgz)$/i;

function badUrl(url: string): MmeError {
  return new MmeError(
    'MME_ERR_BAD_REQUEST',
    `only local directories or .tar.gz files are accepted as a model url, got ${quote(url)}`,
  );
}

type Target = { kind: 'dir' | 'archive'; path: string };

function insideAny(p: string, roots: readonly string[]): boolean {
  return roots.some((root) => p === root || p.startsWith(root.endsWith(path.sep) ? root : root + path.sep));
}

/** The roots are the server's own paths: only the cause, which the client never sees, lists them. */
function outsideRoots(url: string, roots: readonly string[]): MmeError {
  return new MmeError(
    'MME_ERR_BAD_REQUEST',
    `url ${quote(url)} is outside the model roots (config key model_roots; by default model_store and /opt/ml/models); give a url relative to model_store, put the model under a root, or add its directory to model_roots`,
    { cause: new Error(`model roots in effect: ${roots.join(', ')}`) },
  );
}

/**
 * Validates the url and finds what it names. The url itself may be a symbolic link (model stores are
 * often mounted that way); its realpath is checked again, and nothing inside it is ever followed.
 * Every message names the url as the client sent it, never the path it resolved to.
 */
async function locate(
  url: string,
  roots: readonly string[] | undefined,
  store: string | null | undefined,
  reads: DirReads,
): Promise<Target> {
  if (typeof url !== 'string' || url.trim() === '' || url.includes('\0') || REMOTE_URL.test(url)) throw badUrl(url);
  const resolved = path.resolve(store ?? '', url);
  if (insideAny(resolved, SYSTEM_ROOTS)) throw badUrl(url);
  // Checked on the path as written before anything is read, and again after links are followed.
  const realRoots = roots ? await Promise.all(roots.map((r) => reads.realpath(r).catch(() => path.resolve(r)))) : null;
  if (realRoots && !insideAny(resolved, [...roots!.map((r) => path.resolve(r)), ...realRoots]))
    throw outsideRoots(url, roots!);
  let real: string;
  try {
    real = await reads.realpath(resolved);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENAMETOOLONG') {
      throw new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found in model store: ${quote(url)}`);
    }
    throw fsFailure(`reading ${quote(url)}`, err);
  }
  if (insideAny(real, SYSTEM_ROOTS)) throw badUrl(url);
  if (realRoots && !insideAny(real, realRoots)) throw outsideRoots(url, roots!);
  const st = await reads.stat(real).catch((err: unknown) => {
    throw fsFailure(`reading ${quote(url)}`, err);
  });
  if (st.isDirectory()) return { kind: 'dir', path: real };
  // The name the client gave decides, not the link target's: a store may link to content-addressed blobs.
  if (st.isFile() && ARCHIVE_NAME.test(resolved)) return { kind: 'archive', path: real };
  throw badUrl(url);
}

function effectiveLimits(limits: ArchiveLimits = {}): Required<ArchiveLimits> {
  const given = Object.entries(limits).filter(([, v]) => v !== undefined);
  return { ...DEFAULT_ARCHIVE_LIMITS, ...Object.fromEntries(given) };
}

async function makeExtractionDir(cacheDir: string): Promise<string> {
  try {
    await mkdir(cacheDir, { recursive: true, mode: 0o700 });
    // A fresh name per load: never extract into a directory anyone else could have prepared.
    return await mkdtemp(path.join(cacheDir, 'model-'));
  } catch (err) {
    throw fsFailure('creating the model extraction directory', err);
  }
}

/** `err` with the directory the model was read from (and its parent, unless that is /) shown as the url, quoted. */
function hideDir(err: unknown, dir: string, url: string): unknown {
  if (!isMmeError(err)) return err;
  const parent = path.dirname(dir);
  const shown = quote(url);
  // One pass: a url that is itself the path (an absolute url) must not be replaced again.
  const pieces = err.message.split(dir);
  return err.withMessage(
    (parent === path.parse(dir).root ? pieces : pieces.map((p) => p.split(parent).join(`${shown}/..`))).join(shown),
  );
}

async function extractModel(url: string, archive: string, opts: ResolveArtifactOptions): Promise<ModelArtifact> {
  const dest = await makeExtractionDir(opts.cacheDir);
  try {
    await extractInChild(archive, dest, effectiveLimits(opts.limits));
    const model = await resolveModelDir(dest, quote(url), opts.handler);
    let removal: Promise<void> | undefined;
    return {
      url,
      ...model,
      extractedTo: dest,
      dispose: () => (removal ??= rm(dest, { recursive: true, force: true })),
      hidePaths: (err) => hideDir(err, dest, url),
    };
  } catch (err) {
    // The load error is what the client needs; a failed cleanup must not replace it.
    await rm(dest, { recursive: true, force: true }).catch(() => undefined);
    throw err;
  }
}

/**
 * `url` is the load request's, as the client sent it (relative to `store`, or absolute). Rejects
 * with an MmeError: 400 for a bad url or model, 404 when the path does not exist, 507 for a full disk.
 */
export async function resolveArtifact(url: string, opts: ResolveArtifactOptions): Promise<ModelArtifact> {
  const reads = opts.reads ?? asyncReads;
  const target = await locate(url, opts.roots, opts.store, reads);
  if (target.kind === 'archive') return extractModel(url, target.path, opts);
  const model = await resolveModelDir(target.path, quote(url), opts.handler, reads);
  return {
    url,
    ...model,
    extractedTo: null,
    dispose: async () => {},
    hidePaths: (err) => hideDir(err, target.path, url),
  };
}
