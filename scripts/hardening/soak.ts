/**
 * `npm run soak`: the long cases of reliability-security.md §6 at full size, each against a CLI
 * server of its own; the test suite runs short versions of the same code (test/hardening/).
 *   T-L5 500 load → 10 invokes → unload cycles, then 50 distinct models; and the leaking control
 *   T-P4 300 loads under a memory budget, each 507 answered by unloading the least recently used
 *   T-H2 300 header and 50 body slowloris sockets at the server's real timeouts (60 s / 70 s)
 *   T-H5 a pooled client and a load balancer for 10 minutes around the real keepAliveTimeout (65 s)
 *   the boundary property's rounds under their RSS bounds, in both worker modes (./boundary-memory.ts)
 *   the RSS bounds of the hardening, repository and gRPC cases the tests run without them (./memory-bounds.ts)
 * T-H5 runs alongside the others (it sends a request a minute); the rest run one after another.
 */
import { kDefaultLimits } from '../../src/util/listener-limits';
import { withCliServer } from '../../harness/cli-server';
import { reportBoundaryMemory } from './boundary-memory';
import { runEvictionCycle } from './eviction-cycle';
import { keepAliveProblems } from './keepalive';
import { runLeakSoak } from './leak-soak';
import { reportMemoryBounds } from './memory-bounds';
import { CaseReport } from './report';
import { runSlowClients, slowClientProblems } from './slow-clients';

const USAGE = `Usage: npm run soak
  The long reliability cases at full size (load/unload cycles, leak checks, eviction cycles, slow clients, the boundary rounds' and the other cases' memory), each against its own CLI server, with a 10-minute keep-alive case alongside; takes tens of minutes or more.`;

void CaseReport.run(USAGE, async (report) => {
  const progress = (what: string) => (line: string) => console.log(`  ${what} ${line}`);
  const keepAliveMs = kDefaultLimits.keepAliveTimeoutMs;
  const keepAlive = withCliServer('', (s) =>
    keepAliveProblems(s.url, keepAliveMs, Math.ceil(600_000 / keepAliveMs) + 1),
  ).then((problems) => report.add('T-H5 keepalive_idle_race, 10 min', problems, `keepAliveTimeout ${keepAliveMs} ms`));

  const soak = await runLeakSoak({ cycles: 500, distinctModels: 50, progress: progress('T-L5') });
  report.add(
    'T-L5 load_unload_soak_leak, 500 cycles + 50 models',
    soak.problems,
    `RSS ${(soak.rssGrowthBytes / 2 ** 20).toFixed(1)} MiB from the middle, fds ${soak.fdGrowth}`,
  );
  const control = await runLeakSoak({ cycles: 60, distinctModels: 0, leaky: true });
  report.add(
    'T-L5 negative control (sessions kept in a kept worker)',
    control.ok ? ['the leak check passed a server that leaks'] : [],
    control.problems.join('; '),
  );

  const eviction = await runEvictionCycle(300, 150);
  report.add(
    'T-P4 eviction_cycle, 300 loads',
    eviction.problems,
    `${eviction.refusals} refusals, at most ${eviction.mostLoaded} models loaded`,
  );

  const limits = {
    headersTimeoutMs: kDefaultLimits.headersTimeoutMs,
    requestTimeoutMs: kDefaultLimits.requestTimeoutMs,
    checkMs: Math.min(30_000, kDefaultLimits.headersTimeoutMs / 2),
  };
  const slow = await withCliServer('', (s) =>
    runSlowClients({
      port: Number(new URL(s.url).port),
      headerSockets: 300,
      bodySockets: 50,
      headerByteEveryMs: 5000,
      bodyByteEveryMs: 100,
      boundMs: 2 * (limits.requestTimeoutMs + limits.checkMs),
      minProbes: 50,
      probeEveryMs: 100,
    }),
  );
  report.add(
    'T-H2 slowloris_headers_and_body, real timeouts',
    slowClientProblems(slow, limits, 50, true),
    `${slow.probes.length} probes`,
  );

  await reportBoundaryMemory(report, 300, Date.now() % 2 ** 31);
  await reportMemoryBounds(report);

  await keepAlive;
});
