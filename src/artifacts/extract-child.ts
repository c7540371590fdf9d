/**
 * Runs extractArchive in a short-lived child process. Some node-tar parser bugs are uncatchable crashes
 * (CVE-2026-59871), and a hostile archive can burn CPU and heap; in a child neither reaches the server,
 * and `/ping` stays responsive. This file is both the parent-side API and the child's entry point.
 */
import { fork } from 'node:child_process';
import { invalidModel, isMmeError, MmeError, WireError } from '../errors';
import { ArchiveLimits, extractArchive } from './extract-archive';

interface ExtractRequest {
  archive: string;
  dest: string;
  limits: Required<ArchiveLimits>;
}

type ExtractReply = { ok: true } | { ok: false; error: WireError };

// Extraction streams; the heap only holds tar headers and small buffers.
const CHILD_HEAP_MB = 256;

/**
 * Extracts `archive` into `dest` in a child process and resolves once the child has exited, so no write
 * of it can still be in flight when the caller deletes `dest`.
 */
export function extractInChild(archive: string, dest: string, limits: Required<ArchiveLimits>): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    // execArgv is explicit so the server's own flags (--inspect, loaders) are not inherited.
    const child = fork(__filename, [], {
      execArgv: [`--max-old-space-size=${CHILD_HEAP_MB}`],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    let reply: ExtractReply | undefined;
    child.on('message', (m: ExtractReply) => {
      reply = m;
    });
    child.on('error', (err) => {
      // Only a failed spawn leaves no exit event to settle on.
      if (child.pid === undefined)
        reject(
          new MmeError('MME_ERR_LOAD_FAILED', `could not start the archive extractor: ${err.message}`, { cause: err }),
        );
    });
    child.on('exit', (code, signal) => {
      if (reply?.ok) return resolve();
      if (reply) return reject(MmeError.fromWire(reply.error));
      // The kernel's OOM killer is what sends SIGKILL here; that is a resource problem, not a bad archive.
      if (signal === 'SIGKILL')
        return reject(new MmeError('MME_ERR_INSUFFICIENT_MEMORY', 'the archive extractor was killed (out of memory?)'));
      reject(
        invalidModel(
          `the archive could not be extracted: the extractor ${signal ? `was killed by ${signal}` : `exited with code ${code}`}`,
        ),
      );
    });
    const request: ExtractRequest = { archive, dest, limits };
    child.send(request);
  });
}

function childMain(): void {
  // An orphaned extraction would only fill the disk for nobody.
  process.once('disconnect', () => process.exit(1));
  process.once('message', (request: ExtractRequest) => {
    extractArchive(request.archive, request.dest, request.limits)
      .then(
        (): ExtractReply => ({ ok: true }),
        (err: unknown): ExtractReply => {
          const error = isMmeError(err)
            ? err
            : new MmeError('MME_ERR_INTERNAL', `archive extraction failed: ${String(err)}`);
          return { ok: false, error: error.toWire() };
        },
      )
      .then((reply) => {
        // Exiting at once also cancels whatever writes an aborted extraction still had queued.
        process.send!(reply, () => process.exit(0));
      })
      .catch((err: unknown) => {
        // No reply could be sent: the parent reports the exit, and stderr (the server's) says why.
        process.stderr.write(`archive extractor: ${String(err)}\n`);
        process.exit(1);
      });
  });
}

if (require.main === module) childMain();
