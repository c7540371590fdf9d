import { spawnSync } from 'node:child_process';

/**
 * Why a test may not run on a machine: each id names one missing prerequisite. The suite fails on any
 * pending test whose id is not listed in MME_ALLOW_SKIP (comma-separated), and on any test skipped
 * without one, so a green run never hides a test that did not run.
 */
export const kSkipIds = {
  nginx: 'nginx is not installed (npm test installs it with apt-get when run as root)',
  haproxy: 'haproxy is not installed (npm test installs it with apt-get when run as root)',
  kubectl: 'kubectl is not installed',
  'python-requests':
    'python3 cannot import requests (npm test installs python3-requests with apt-get when run as root)',
  podman: "podman or the Dockerfile's base image is not ready (.ci/run prepares both)",
  'cgroup-cpu':
    'no cgroup with a cpu controller can be made here (needs root and a writable cgroup v2 or v1 cpu hierarchy)',
  'user-namespaces': 'unprivileged user and mount namespaces (unshare -Urm) are not available',
  'peer-tests': 'the peer Postman collections (../shared/peer-tests) are not checked out beside the repository',
} as const;

export type SkipId = keyof typeof kSkipIds;

/** Tests and suites (a skip in a before-all hook skips its whole suite) that declared why they skip. */
const declared = new Map<Mocha.Test | Mocha.Suite, SkipId>();

/** Skips the running test, or the suite of the running before-all hook, saying why; `id` must be allowed for the run to pass. */
export function skipBecause(ctx: Mocha.Context, id: SkipId, why: string): never {
  const runnable = ctx.test!;
  declared.set((runnable as { type?: string }).type === 'hook' ? runnable.parent! : (runnable as Mocha.Test), id);
  console.log(`      skipped [${id}]: ${why}`);
  ctx.skip();
}

/** The skip ids MME_ALLOW_SKIP names; unknown ids are an error, so a typo cannot allow nothing in silence. */
export function allowedSkips(env: NodeJS.ProcessEnv = process.env): Set<SkipId> {
  const ids = (env.MME_ALLOW_SKIP ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = ids.filter((id) => !(id in kSkipIds));
  if (unknown.length)
    throw new Error(
      `MME_ALLOW_SKIP names unknown skip ids ${unknown.join(', ')}; known: ${Object.keys(kSkipIds).join(', ')}`,
    );
  return new Set(ids as SkipId[]);
}

function reasonOf(test: Mocha.Test): SkipId | undefined {
  for (let at: Mocha.Test | Mocha.Suite | undefined = test; at; at = at.parent) {
    const id = declared.get(at);
    if (id) return id;
  }
  return undefined;
}

function pendingTests(suite: Mocha.Suite): Mocha.Test[] {
  return [...suite.tests.filter((t) => t.isPending()), ...suite.suites.flatMap(pendingTests)];
}

/**
 * What is wrong with the pending tests under `root`, or null when each one's id is allowed: tests skipped
 * without an id, and tests whose id MME_ALLOW_SKIP does not name.
 */
export function pendingProblem(root: Mocha.Suite, allowed: ReadonlySet<SkipId>): string | null {
  const lines: string[] = [];
  const ids = new Set<SkipId>();
  for (const t of pendingTests(root)) {
    const id = reasonOf(t);
    if (id === undefined)
      lines.push(`  ${t.fullTitle()}: skipped without a reason (skip with skipBecause, test/helpers/skip.ts)`);
    else if (!allowed.has(id)) {
      ids.add(id);
      lines.push(`  ${t.fullTitle()}: [${id}] ${kSkipIds[id]}`);
    }
  }
  if (!lines.length) return null;
  const allow = [...allowed, ...ids].join(',');
  return `${lines.length} tests did not run; install what they need${ids.size ? `, or accept it with MME_ALLOW_SKIP=${allow}` : ''}:\n${lines.join('\n')}`;
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
