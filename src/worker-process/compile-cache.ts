/**
 * V8's compile cache (node:module enableCompileCache, Node ≥ 22.1): a worker started after the
 * first one reuses the code the first compiled, so a spare is ready sooner. Absent on older Node
 * (20 has none): then nothing happens. MME_COMPILE_CACHE_DIR names the directory; by default one
 * under the system temp directory, shared by every worker of this user. Imported first by main.ts:
 * it caches only what is required after it.
 */
import module from 'node:module';
import os from 'node:os';
import path from 'node:path';

function enableCompileCache(): void {
  const enable = (module as { enableCompileCache?: (dir?: string) => unknown }).enableCompileCache;
  if (typeof enable !== 'function') return;
  try {
    enable(process.env.MME_COMPILE_CACHE_DIR || path.join(os.tmpdir(), 'mme-compile-cache'));
  } catch {
    // A cache is an optimisation: a directory that cannot be written leaves the worker as it was.
  }
}

enableCompileCache();
