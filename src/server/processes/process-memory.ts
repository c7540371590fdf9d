import { readFile } from 'node:fs/promises';

/**
 * Memory a process really costs (bytes; 0 once gone): PSS, which splits shared pages such as the
 * node binary and libonnxruntime between the processes mapping them, else RSS.
 */
export async function processMemoryBytes(pid: number): Promise<number> {
  try {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
    const m = /^Pss:\s+(\d+) kB/m.exec(rollup);
    if (m) return Number(m[1]) * 1024;
  } catch {
    // older kernels have no smaps_rollup; fall through to status
  }
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+) kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
