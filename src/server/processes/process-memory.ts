import { readFile } from 'node:fs/promises';

/**
 * Memory a process really costs (bytes; 0 once gone): PSS, which splits shared pages such as the
 * node binary and libonnxruntime between the processes mapping them, else RSS (older kernels have
 * no smaps_rollup).
 */
export async function processMemoryBytes(pid: number): Promise<number> {
  for (const [file, field] of [
    ['smaps_rollup', /^Pss:\s+(\d+) kB/m],
    ['status', /^VmRSS:\s+(\d+) kB/m],
  ] as const) {
    const m = field.exec(await readFile(`/proc/${pid}/${file}`, 'utf8').catch(() => ''));
    if (m) return Number(m[1]) * 1024;
  }
  return 0;
}
