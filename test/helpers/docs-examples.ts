/** The examples of the docs pages, taken from the page as a user copies them, so a test runs what the page shows. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { type CommandRun, runCommand } from '../../harness/run-command';

// Compiled to dist/test/helpers/, so the repo root is three levels up.
export const kRepoRoot = path.resolve(__dirname, '../../..');

/** The fenced blocks of `lang` in a docs page (path relative to the repository root), in page order. */
export function codeBlocks(page: string, lang: string): string[] {
  const text = fs.readFileSync(path.join(kRepoRoot, page), 'utf8');
  return [...text.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1]);
}

/** A command of a sh block, with the JSON output shown under it (`# {…}`), if any. */
export interface ShownCommand {
  command: string;
  shown: string | null;
}

/**
 * A sh block's commands (continuation lines joined, here-documents kept whole), each with the
 * `# {…}` line right under it; other comments introduce the next commands.
 */
export function shownCommands(block: string): ShownCommand[] {
  const commands: ShownCommand[] = [];
  const lines = block.replace(/\\\n/g, '').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === '') continue;
    if (line.startsWith('# ')) {
      const last = commands.at(-1);
      if (last && last.shown === null && line.startsWith('# {')) last.shown = line.slice(2);
      continue;
    }
    const heredoc = /<<'(\w+)'$/.exec(line);
    const end = heredoc ? lines.indexOf(heredoc[1], i + 1) : i;
    assert.ok(end >= i, `the here-document of "${line.slice(0, 100)}" has no ${heredoc?.[1]} line`);
    commands.push({ command: lines.slice(i, end + 1).join('\n'), shown: null });
    i = end;
  }
  return commands;
}

/** How many outputs (`# {…}` lines) the blocks show, counted apart from shownCommands: what a test must have compared. */
export const outputsShown = (blocks: readonly string[]) =>
  blocks.reduce((n, b) => n + (b.match(/^# \{/gm) ?? []).length, 0);

/** `bash -c command` in `cwd`; never rejects. */
export function bash(command: string, cwd: string, env: Record<string, string> = {}): Promise<CommandRun> {
  return runCommand('bash', ['-c', command], { cwd, env, timeoutMs: 120_000 });
}

/**
 * docs/handlers.md's `iris` example made as the page says, in `dir` standing for the repository
 * root: its first sh block run there (it copies model-store/mlp, which is copied in first), its
 * first js block saved as model-store/iris/handler.js. Returns dir/model-store.
 */
export async function makeIrisExample(dir: string): Promise<string> {
  const store = path.join(dir, 'model-store');
  fs.cpSync(path.join(kRepoRoot, 'model-store', 'mlp'), path.join(store, 'mlp'), { recursive: true });
  const [setup] = codeBlocks('docs/handlers.md', 'sh');
  const [handler] = codeBlocks('docs/handlers.md', 'js');
  assert.ok(
    setup?.includes('model-store/iris') && handler?.includes('exports.preprocess'),
    'docs/handlers.md still has the iris example',
  );
  const run = await bash(setup, dir);
  assert.equal(run.code, 0, run.stderr);
  fs.writeFileSync(path.join(store, 'iris', 'handler.js'), handler);
  return store;
}
