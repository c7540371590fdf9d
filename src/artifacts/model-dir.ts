import path from 'node:path';
import { invalidModel, MmeError, quote } from '../errors';
import { asyncReads, type DirReads } from './dir-reads';
import { errnoOf, fsFailure } from './fs-errors';
import { isSafeRelativePath, MODEL_CONFIG_FILE, ModelDirConfig, readModelConfig } from './model-config';

const DEFAULT_HANDLER = 'handler.js';
const PREFERRED_MODEL = 'model.onnx';

export interface ModelDir {
  /** The directory holding the .onnx file (and the handler and model-config.json): the root, or a subdirectory. */
  dir: string;
  onnxPath: string;
  onnxBytes: number;
  /** The load request's handler, else model-config.json's, else handler.js beside the model; null for none. */
  handlerPath: string | null;
  modelConfig: ModelDirConfig;
}

function isOnnx(name: string): boolean {
  return name.toLowerCase().endsWith('.onnx');
}

function listing(names: string[]): string {
  const shown = names.slice(0, 10).join(', ');
  return names.length > 10 ? `${shown}, ... (${names.length} in all)` : shown;
}

/**
 * Lists one directory without following links: Dirent types come from the directory entry itself, so a
 * symlinked directory is neither a file nor a directory here. Dot-entries are skipped because macOS tar
 * adds "._model.onnx" AppleDouble companions that are not models.
 */
async function scan(
  root: string,
  rel: string,
  where: (rel: string) => string,
  reads: DirReads,
): Promise<{ onnx: string[]; subdirs: string[] }> {
  const entries = await reads.readdir(path.join(root, rel)).catch((err: unknown) => {
    throw fsFailure(`listing ${where(rel || '.')}`, err);
  });
  const result = { onnx: [] as string[], subdirs: [] as string[] };
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    const relName = rel ? `${rel}/${e.name}` : e.name;
    if (isOnnx(e.name) && e.isSymbolicLink())
      throw invalidModel(`${where(relName)} is a symbolic link; links are not followed`);
    if (isOnnx(e.name) && e.isFile()) result.onnx.push(relName);
    else if (e.isDirectory()) result.subdirs.push(relName);
  }
  result.onnx.sort();
  result.subdirs.sort();
  return result;
}

function choose(candidates: string[], label: string): string {
  if (candidates.length === 1) return candidates[0];
  const preferred = candidates.filter((c) => path.posix.basename(c) === PREFERRED_MODEL);
  if (preferred.length === 1) return preferred[0];
  const why = preferred.length ? `more than one is named ${PREFERRED_MODEL}` : `none is named ${PREFERRED_MODEL}`;
  throw invalidModel(`${label} holds several .onnx files and ${why}: ${listing(candidates)}`);
}

/** The .onnx file to serve, relative to root: top level first, else one directory down. */
async function findOnnx(root: string, label: string, where: (rel: string) => string, reads: DirReads): Promise<string> {
  const top = await scan(root, '', where, reads);
  if (top.onnx.length) return choose(top.onnx, label);
  const nested: string[] = [];
  for (const sub of top.subdirs) nested.push(...(await scan(root, sub, where, reads)).onnx);
  if (nested.length) return choose(nested, label);
  throw invalidModel(`${label} must hold a .onnx file (at its top level or one directory down)`);
}

/**
 * lstat of `rel` under `dir`, refusing a symbolic link at any component so a handler path cannot lead
 * out of the model directory. Null when the path does not exist.
 */
async function lstatInside(dir: string, rel: string, where: (rel: string) => string, reads: DirReads) {
  const parts = rel.split(/[\\/]/).filter((p) => p && p !== '.');
  let current = dir;
  for (const [i, part] of parts.entries()) {
    current = path.join(current, part);
    let st;
    try {
      st = await reads.lstat(current);
    } catch (err) {
      if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return null;
      throw fsFailure(`reading ${where(rel)}`, err);
    }
    if (st.isSymbolicLink())
      throw invalidModel(`${where(parts.slice(0, i + 1).join('/'))} is a symbolic link; links are not followed`);
    if (i === parts.length - 1) return st;
  }
  return null;
}

/** A handler path and who named it (for messages): the load request, or model-config.json. */
type NamedHandler = { rel: string; namedIn: string };

/** The handler file, by one rule whoever names it: a regular file inside the model directory, no link on the way. */
async function findHandler(
  dir: string,
  named: NamedHandler | null,
  where: (rel: string) => string,
  reads: DirReads,
): Promise<string | null> {
  const rel = named?.rel ?? DEFAULT_HANDLER;
  const st = await lstatInside(dir, rel, where, reads);
  if (!st) {
    if (!named) return null;
    throw invalidModel(`handler ${quote(named.rel)} named in ${named.namedIn} does not exist`);
  }
  if (!st.isFile()) throw invalidModel(`handler ${where(rel)} is not a regular file`);
  return path.join(dir, rel);
}

/** The load request's handler, checked as model-config.json's "handler" field is; it takes precedence over that field. */
function namedHandler(requested: string | undefined, config: ModelDirConfig, configFile: string): NamedHandler | null {
  if (requested === undefined)
    return config.handler === undefined ? null : { rel: config.handler, namedIn: configFile };
  if (!isSafeRelativePath(requested)) {
    throw new MmeError(
      'MME_ERR_BAD_REQUEST',
      `handler ${quote(requested)} must be a relative path inside the model directory`,
    );
  }
  return { rel: requested, namedIn: 'the load request' };
}

/**
 * Picks the .onnx file in a model directory and reads the handler and model-config.json beside it.
 * `label` names the directory in messages (the url the client sent, never an internal path).
 */
export async function resolveModelDir(
  root: string,
  label: string,
  requestedHandler?: string,
  reads: DirReads = asyncReads,
): Promise<ModelDir> {
  const at = (base: string) => (rel: string) => `${path.posix.join(base, rel)} in ${label}`;
  const onnxRel = await findOnnx(root, label, at(''), reads);
  const onnxPath = path.join(root, onnxRel);
  const dir = path.dirname(onnxPath);
  const whereInDir = at(path.posix.dirname(onnxRel));

  const { size: onnxBytes } = await reads.lstat(onnxPath).catch((err: unknown) => {
    throw fsFailure(`reading ${whereInDir(path.basename(onnxPath))}`, err);
  });
  if (onnxBytes === 0) throw invalidModel(`${whereInDir(path.basename(onnxPath))} is empty`);

  const modelConfig = await readModelConfig(dir, whereInDir(MODEL_CONFIG_FILE), reads);
  const handlerPath = await findHandler(
    dir,
    namedHandler(requestedHandler, modelConfig, whereInDir(MODEL_CONFIG_FILE)),
    whereInDir,
    reads,
  );
  return { dir, onnxPath, onnxBytes, handlerPath, modelConfig };
}
