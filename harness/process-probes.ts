/** What a process and its descendants hold and do, read from /proc (Linux only). */
import fs from 'node:fs';
import { processMemoryBytes } from '../src/server/processes/worker-spawn';

/** Fields of /proc/<pid>/stat after the command name: [state, ppid, ...]; null once the process is gone. */
function statFields(pid: number): string[] | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

function allPids(): number[] {
  return fs
    .readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .map(Number);
}

/** True while a process with this pid exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  const f = statFields(pid);
  return f !== null && f[0] !== 'Z';
}

/** Pids of live worker processes (our worker entry point) whose parent is `ppid`. */
export function workerPidsOf(ppid: number): number[] {
  return allPids().filter((pid) => {
    const f = statFields(pid);
    if (f === null || f[0] === 'Z' || Number(f[1]) !== ppid) return false;
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('worker-process/main.js');
    } catch {
      return false; // the process ended while we looked
    }
  });
}

/** Polls a condition until true or the bound passes; used where the event is another process's exit. */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  what: string,
  boundMs = 10_000,
  everyMs = 20,
): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${boundMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Every live descendant of `root` (children, their children, …), zombies excluded. */
export function descendantsOf(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const pid of allPids()) {
    const f = statFields(pid);
    if (!f || f[0] === 'Z') continue;
    const ppid = Number(f[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  const out: number[] = [];
  const visit = (pid: number) => {
    for (const c of children.get(pid) ?? []) {
      out.push(c);
      visit(c);
    }
  };
  visit(root);
  return out;
}

/** Children of `ppid` that have exited but were not reaped. */
export function zombiesOf(ppid: number): number[] {
  return allPids().filter((pid) => {
    const f = statFields(pid);
    return f !== null && f[0] === 'Z' && Number(f[1]) === ppid;
  });
}

/**
 * Pids of live processes whose environment holds `marker` (NAME=value) and whose parent is not
 * `ppid`: workers or extractors of that server that outlived it or were re-parented.
 */
export function orphansOf(ppid: number, marker: string): number[] {
  return allPids().filter((pid) => {
    const f = statFields(pid);
    if (pid === ppid || f === null || f[0] === 'Z' || Number(f[1]) === ppid) return false;
    try {
      return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(marker);
    } catch {
      return false;
    }
  });
}

/** CPU time (user + system) a process has used, µs; 0 once it is gone. */
export function cpuMicros(pid: number): number {
  const f = statFields(pid);
  return f ? ((Number(f[11]) + Number(f[12])) * 1e6) / kClockTicks : 0;
}

/** USER_HZ: /proc/<pid>/stat counts CPU time in these ticks, 100 a second on every Linux we run on. */
const kClockTicks = 100;

/** PSS of `root` and every descendant (a server and its workers), bytes: shared pages counted once. */
export async function treePssBytes(root: number): Promise<number> {
  const sizes = await Promise.all([root, ...descendantsOf(root)].map((pid) => processMemoryBytes(pid)));
  return sizes.reduce((a, b) => a + b, 0);
}

/** Resident set size in bytes (0 once the process is gone). */
export function rssBytes(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export function fdCount(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

/** Inodes of the sockets among a process's open file descriptors. */
function socketInodes(pid: number): Set<string> {
  const out = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) out.add(m[1]);
    } catch {
      // closed while we looked
    }
  }
  return out;
}

/** /proc/net/tcp's hex address: IPv4 as one little-endian word, IPv6 as four. */
function hexAddress(hex: string): string {
  const words = hex.match(/.{8}/g)!.map((w) => w.match(/../g)!.reverse().join(''));
  if (words.length === 1)
    return words[0]
      .match(/../g)!
      .map((b) => parseInt(b, 16))
      .join('.');
  const groups = words
    .join('')
    .match(/.{4}/g)!
    .map((g) => parseInt(g, 16).toString(16));
  return `[${groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::')}]`;
}

/**
 * What a process listens on: "tcp host:port", "udp host:port" (any bound UDP socket) or "unix path",
 * from the sockets among its file descriptors, as `ss -ltnp` would show them.
 */
export function listeningSockets(pid: number): string[] {
  const inodes = socketInodes(pid);
  const out: string[] = [];
  for (const [file, proto, state] of [
    ['tcp', 'tcp', '0A'],
    ['tcp6', 'tcp', '0A'],
    ['udp', 'udp', '07'],
    ['udp6', 'udp', '07'],
  ] as const) {
    for (const line of fs.readFileSync(`/proc/${pid}/net/${file}`, 'utf8').trim().split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] !== state || !inodes.has(f[9])) continue;
      const [addr, port] = f[1].split(':');
      out.push(`${proto} ${hexAddress(addr)}:${parseInt(port, 16)}`);
    }
  }
  for (const line of fs.readFileSync(`/proc/${pid}/net/unix`, 'utf8').trim().split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    // Flags __SO_ACCEPTCON (0x10000): a listening socket.
    if ((parseInt(f[3], 16) & 0x10000) !== 0 && inodes.has(f[6])) out.push(`unix ${f[7] ?? '(unnamed)'}`);
  }
  return out.sort();
}
