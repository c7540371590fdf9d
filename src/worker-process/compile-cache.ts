/**
 * V8's compile cache (Node ≥ 22.1; nothing on 20): a worker reuses the code the first one compiled,
 * so a spare is ready sooner. MME_COMPILE_CACHE_DIR names the directory. Imported first by main.ts:
 * it caches only what is required after it.
 */
import module from 'node:module';
import os from 'node:os';
import path from 'node:path';

const enable = (module as { enableCompileCache?: (dir?: string) => unknown }).enableCompileCache;
try {
  enable?.(process.env.MME_COMPILE_CACHE_DIR || path.join(os.tmpdir(), 'mme-compile-cache'));
} catch {
  // A cache is an optimisation: a directory that cannot be written leaves the worker as it was.
}
