import fs from 'node:fs';

/** True while a process with this pid exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Pids of live worker processes (our worker entry point) whose parent is `ppid`. */
export function workerPidsOf(ppid: number): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== ppid || fields[0] === 'Z') continue;
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmd.includes('worker/main.js')) out.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

/** Polls a condition until true or the bound passes; used where the event is another process's exit. */
export async function waitFor(cond: () => boolean | Promise<boolean>, what: string, boundMs = 10_000, everyMs = 20): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${boundMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
