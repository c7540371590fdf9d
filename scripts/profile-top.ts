/**
 * `node dist/scripts/profile-top.js DIR [N]`: the top self-time frames of every .cpuprofile in DIR
 * (as written by `node --cpu-prof`, or by MME_BENCH_PROFILE=DIR under a bench), one table per
 * process — how the README's performance section was made.
 */
import fs from 'node:fs';
import path from 'node:path';
import { printedHelp } from './cli-flags';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export function topFrames(
  profile: Profile,
  n: number,
): { totalMs: number; frames: Array<{ frame: string; share: number }> } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    const cf = byId.get(id)!.callFrame;
    const frame =
      `${cf.functionName || '(anonymous)'} ${cf.url ? `${cf.url.split('/').slice(-2).join('/')}:${cf.lineNumber + 1}` : ''}`.trim();
    self.set(frame, (self.get(frame) ?? 0) + dt);
  });
  const frames = [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([frame, t]) => ({ frame, share: t / total }));
  return { totalMs: total / 1000, frames };
}

const USAGE = `Usage: node dist/scripts/profile-top.js DIR [N]
  The top N (default 12) self-time frames of every .cpuprofile in DIR, one table per process.`;

if (require.main === module && !printedHelp(USAGE)) {
  const [dir, count] = process.argv.slice(2);
  if (!dir) {
    console.error(USAGE);
    process.exit(2);
  }
  for (const file of fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort()) {
    const { totalMs, frames } = topFrames(
      JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as Profile,
      Number(count ?? 12),
    );
    console.log(`\n${file} (${totalMs.toFixed(0)} ms sampled)\n| self | frame |\n|---|---|`);
    for (const f of frames) console.log(`| ${(f.share * 100).toFixed(1)} % | \`${f.frame}\` |`);
  }
}
