import { spawnSync } from 'node:child_process';

/**
 * Why a test may not run on a machine: each id names one prerequisite beyond Node and npm, and the
 * command that brings it. `npm test` passes without them and ends with a block naming each test that
 * did not run (the tiers of the README's testing section); under MME_STRICT=1 (.ci/run) each one fails
 * the run unless MME_ALLOW_SKIP names its id. A test skipped without an id always fails the run.
 */
export const kSkipIds = {
  nginx: { needs: 'nginx', bring: 'apt-get install nginx (as root)' },
  haproxy: { needs: 'haproxy', bring: 'apt-get install haproxy (as root)' },
  kubectl: { needs: 'kubectl', bring: 'install kubectl (https://kubernetes.io/docs/tasks/tools/)' },
  'python-requests': {
    needs: 'python3 with requests (examples/invoke.py)',
    bring: 'apt-get install python3-requests (as root), or pip install requests',
  },
  'python-numpy': {
    needs: "python3 with numpy (docs/first-model.md's .npy example)",
    bring: 'apt-get install python3-numpy (as root), or pip install numpy',
  },
  podman: {
    needs: "podman and the Dockerfile's base image node:24-bookworm-slim",
    bring: 'apt-get install podman (as root), then podman pull docker.io/library/node:24-bookworm-slim',
  },
  cgroup: {
    needs:
      "root and a writable cgroup tree (v2 with the memory and cpu controllers, or v1's memory and cpu hierarchies)",
    bring: 'run npm test as root on a machine whose cgroups are writable',
  },
  'user-namespaces': {
    needs: 'unprivileged user and mount namespaces (unshare -Urm)',
    bring:
      'sysctl -w kernel.unprivileged_userns_clone=1 (or user.max_user_namespaces > 0), or run where unshare is allowed',
  },
  'peer-tests': {
    needs: "MMS's and TorchServe's Postman collections in ../shared/peer-tests (mms/, torchserve/)",
    bring:
      'copy test/postman/*.json of awslabs/multi-model-server to ../shared/peer-tests/mms/ and of pytorch/serve to ../shared/peer-tests/torchserve/ (CI clones beside shared/)',
  },
} as const;

export type SkipId = keyof typeof kSkipIds;

const isSkipId = (id: string): id is SkipId => Object.hasOwn(kSkipIds, id);

/** Tests and suites (a skip in a before-all hook skips its whole suite) that declared why they skip. */
const declared = new Map<Mocha.Test | Mocha.Suite, { id: SkipId; why: string }>();

/** Skips the running test, or the suite of the running before-all hook, saying why; see kSkipIds for what `id` means to the run. */
export function skipBecause(ctx: Mocha.Context, id: SkipId, why: string): never {
  if (!isSkipId(id))
    throw new Error(`skipBecause: unknown skip id ${String(id)}; known: ${Object.keys(kSkipIds).join(', ')}`);
  const runnable = ctx.test!;
  declared.set((runnable as { type?: string }).type === 'hook' ? runnable.parent! : (runnable as Mocha.Test), {
    id,
    why,
  });
  console.log(`      skipped [${id}]: ${why}`);
  ctx.skip();
}

/** What the run does with tests that did not run: list them (lenient), or fail on each whose id is not `allowed` (strict). */
export interface SkipPolicy {
  strict: boolean;
  allowed: ReadonlySet<SkipId>;
}

/**
 * The policy the environment asks for. MME_STRICT=1 is strict, 0 or unset lenient; MME_ALLOW_SKIP (ids,
 * comma-separated) allows those ids in strict mode, and alone means strict for every other id (as it did
 * before the lenient default). Unknown values are an error, so a typo cannot relax the run in silence.
 */
export function skipPolicy(env: NodeJS.ProcessEnv = process.env): SkipPolicy {
  const ids = (env.MME_ALLOW_SKIP ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = ids.filter((id) => !isSkipId(id));
  if (unknown.length)
    throw new Error(
      `MME_ALLOW_SKIP names unknown skip ids ${unknown.join(', ').slice(0, 100)}; known: ${Object.keys(kSkipIds).join(', ')}`,
    );
  const strictness = env.MME_STRICT ?? '';
  if (!['', '0', '1'].includes(strictness))
    throw new Error(
      `MME_STRICT must be 1 (every skip fails the run) or 0 (skips are listed), not ${strictness.slice(0, 100)}`,
    );
  return { strict: strictness === '1' || (strictness === '' && ids.length > 0), allowed: new Set(ids as SkipId[]) };
}

function reasonOf(test: Mocha.Test): { id: SkipId; why: string } | undefined {
  for (let at: Mocha.Test | Mocha.Suite | undefined = test; at; at = at.parent) {
    const reason = declared.get(at);
    if (reason) return reason;
  }
  return undefined;
}

function pendingTests(suite: Mocha.Suite): Mocha.Test[] {
  return [...suite.tests.filter((t) => t.isPending()), ...suite.suites.flatMap(pendingTests)];
}

/** What the run says about its pending tests: `failure` fails it, `notRun` is printed after the summary. */
export interface SkipReport {
  failure: string | null;
  notRun: string | null;
}

/** Each test under `root` that did not run, grouped by id with what brings it, as `policy` judges them. */
export function skipReport(root: Mocha.Suite, policy: SkipPolicy): SkipReport {
  const bare: string[] = [];
  const byId = new Map<SkipId, string[]>();
  for (const t of pendingTests(root)) {
    const reason = reasonOf(t);
    if (!reason) bare.push(`  ${t.fullTitle()}`);
    else byId.set(reason.id, [...(byId.get(reason.id) ?? []), `  - ${t.fullTitle()} (${reason.why})`]);
  }
  const group = (id: SkipId, lines: string[]) =>
    `[${id}] needs ${kSkipIds[id].needs}; to run: ${kSkipIds[id].bring}\n${lines.join('\n')}`;
  const failing = policy.strict ? [...byId].filter(([id]) => !policy.allowed.has(id)) : [];
  const failures: string[] = [];
  if (bare.length)
    failures.push(
      `${bare.length} tests skipped without a reason (skip with skipBecause, test/helpers/skip.ts):\n${bare.join('\n')}`,
    );
  if (failing.length) {
    const count = failing.reduce((n, [, lines]) => n + lines.length, 0);
    const allow = [...policy.allowed, ...failing.map(([id]) => id)].join(',');
    failures.push(
      `${count} tests did not run under MME_STRICT=1; install what they need, or accept it with MME_ALLOW_SKIP=${allow}:\n` +
        failing.map(([id, lines]) => group(id, lines)).join('\n'),
    );
  }
  const listed = [...byId].filter(([id]) => !policy.strict || policy.allowed.has(id));
  const count = listed.reduce((n, [, lines]) => n + lines.length, 0);
  const notRun = count
    ? `${count} tests did not run on this machine (the run passes without them; MME_STRICT=1 fails on them, as CI does):\n` +
      listed.map(([id, lines]) => group(id, lines)).join('\n')
    : null;
  return { failure: failures.length ? failures.join('\n') : null, notRun };
}

/** Why `unshare -Urm` cannot make a user and mount namespace here, or null when it can. */
export function userNamespaceProblem(): string | null {
  const r = spawnSync('unshare', ['-Urm', 'true'], { encoding: 'utf8' });
  if (r.status === 0) return null;
  const said = (r.error?.message ?? r.stderr ?? '').trim().slice(0, 200);
  return (
    `\`unshare -Urm true\` failed (${r.status === null ? 'did not run' : `exit ${r.status}`}: ${said || 'no message'}); ` +
    'unprivileged user namespaces are off (sysctl kernel.unprivileged_userns_clone=1, or user.max_user_namespaces > 0) ' +
    "or the container forbids unshare/mount (e.g. Docker's default seccomp profile; run with --privileged or podman)"
  );
}
