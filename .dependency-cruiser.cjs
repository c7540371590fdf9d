/**
 * The import rules `npm test` enforces (npm run deps). Type-only imports count
 * (tsPreCompilationDeps): one vanishes from the JavaScript, yet it still puts a responsibility on
 * the wrong side of a boundary.
 */
/** A layer (`from`) that must not import the layers above it (`above`). */
function below(name, comment, from, above) {
  return { name, comment, severity: 'error', from: { path: from }, to: { path: above } };
}

/** A src/server module (`target`) that only the modules matching `importers` may import. */
function onlyFrom(name, comment, target, importers) {
  const from = { pathNot: `^src/server/(${importers}|${target})\\.ts$` };
  return { name, comment, severity: 'error', from, to: { path: `^src/server/${target}\\.ts$` } };
}

module.exports = {
  forbidden: [
    {
      name: 'no-file-cycle',
      comment: "A cycle between files: one of them does the other's job, or both share one that belongs in a third.",
      severity: 'error',
      from: {},
      // A cycle of type-only imports is allowed: a host and its slots name each other's types (one
      // job split in two classes), yet nothing loads in a loop. One runtime import in it still fails.
      to: { circular: true, via: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'no-folder-cycle',
      comment: 'A cycle between folders: each layer must sit wholly above or below the other.',
      severity: 'error',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
    {
      name: 'worker-process-is-alone',
      comment:
        'The worker process runs models, never the server: it may use the protocol, the shared OIP code, errors and utilities, nothing of the server, HTTP or gRPC, even through another module.',
      severity: 'error',
      from: { path: '^src/worker-process/' },
      to: { path: '^src/(server|http|grpc)/', reachable: true },
    },
    // The layers, top to bottom: the composition root (main.ts, mme-server.ts); the doors (http,
    // grpc); the gateway every invoke goes through; the server core (server/**); the shared pieces
    // (protocol, oip, errors, util, config, metrics, logger, artifacts, repository). Each imports
    // only layers below it.
    {
      name: 'nothing-imports-the-composition-root',
      comment: 'main.ts and mme-server.ts wire everything together: only main.ts may import mme-server.ts.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/main\\.ts$' },
      to: { path: '^src/(main|mme-server)\\.ts$' },
    },
    {
      name: 'doors-never-import-each-other',
      comment: 'HTTP and gRPC are two doors to the same gateway: what both need lives in src/gateway or below.',
      severity: 'error',
      from: { path: '^src/(http|grpc)/' },
      to: { path: '^src/(http|grpc)/', pathNot: '^src/$1/' },
    },
    {
      name: 'doors-see-the-server-through-the-gateway',
      comment:
        "A door decodes its wire into the gateway's request and encodes the gateway's answer: what it needs of the server core it takes from src/gateway (models.ts names it), never from src/server.",
      severity: 'error',
      from: { path: '^src/(http|grpc)/' },
      to: { path: '^src/server/' },
    },
    {
      name: 'doors-see-only-the-gateways-contract',
      comment:
        "A door takes of src/gateway its contract alone: the request it decodes its wire into and the guard (door.ts), the Gateway that handles it (gateway.ts), the server's names for the management API (models.ts), the tokens (bearer-tokens.ts) and the OIP shapes (oip/). How the gateway guards, parses controls, runs, counts, traces and logs is its own.",
      severity: 'error',
      from: { path: '^src/(http|grpc)/' },
      to: {
        path: '^src/gateway/',
        pathNot: '^src/gateway/(gateway|door|models|bearer-tokens)\\.ts$|^src/gateway/oip/',
      },
    },
    below(
      'the-door-contract-names-no-server-type',
      "door.ts is what a door fills and is given back: it names none of the server's types (JobOptions, InvokeResult, the frames), so none reaches a door through it.",
      '^src/gateway/door\\.ts$',
      '^src/(server|protocol)/',
    ),
    below(
      'gateway-is-below-the-doors',
      "The gateway knows no transport: a door translates its requests into the gateway's and back.",
      '^src/gateway/',
      '^src/(http|grpc)/',
    ),
    below(
      'server-is-below-the-gateway',
      'The server core (models, workers, hosts, processes, jobs, cache) knows nothing of how requests arrive.',
      '^src/server/',
      '^src/(gateway|http|grpc)/',
    ),
    below(
      'processes-know-no-model',
      "The seam under hosts/: processes/ knows a process as a pid, a channel and an exit, never a model's slot; what it needs of one is an interface HostProcess fills.",
      '^src/server/processes/',
      '^src/server/(?!processes/)',
    ),
    below(
      'shared-pieces-are-below-the-server',
      'Protocol, OIP codecs, errors, utilities, config, metrics, logging, artifacts and the repository serve every layer and import none above them.',
      '^src/(protocol|oip|util|config|metrics|artifacts|repository)/|^src/(errors|logger|unhandled-rejection|model-types)\\.ts$',
      '^src/(server|gateway|http|grpc)/',
    ),
    {
      name: 'protocol-takes-no-side',
      comment: 'The frame protocol is shared by both processes: it imports neither side.',
      severity: 'error',
      from: { path: '^src/protocol/' },
      to: { path: '^src/(server|http|grpc|worker-process)/' },
    },
    // The worker mode (dedicated or shared) is chosen once, where a host is made: a dedicated
    // worker's DedicatedPolicy in spare-pool.ts, a shared host (SharedHost,
    // which takes the SharedPolicy and the memory ledger) in host-pool.ts. Everything else asks the
    // HostPolicy (host-policy.ts) it was given.
    onlyFrom(
      'dedicated-policy-is-chosen-where-a-worker-is-made',
      'Only spare-pool.ts makes dedicated workers: no other module imports DedicatedPolicy.',
      'hosts/dedicated-policy',
      'workers/spare-pool',
    ),
    onlyFrom(
      'shared-hosts-are-made-by-the-pool',
      'Only the host pool (and its heavy-model balance, which reads its hosts) imports SharedPolicy and SharedHost.',
      'hosts/shared-policy',
      'hosts/(host-pool|host-balance)',
    ),
    {
      name: 'shipped-code-stands-alone',
      comment:
        'src/ is what the image and the package ship: it imports nothing of the harness, the tests or the scripts.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(harness|test|scripts)/' },
    },
    {
      name: 'harness-is-below-its-users',
      comment:
        'harness/ is what tests, benches and long runs share: it may use src/, never the tests or the scripts that use it.',
      severity: 'error',
      from: { path: '^harness/' },
      to: { path: '^(test|scripts)/' },
    },
    {
      name: 'scripts-never-import-tests',
      comment:
        'A bench, long run or operator tool that needs a test helper takes it from harness/ (move the helper there).',
      severity: 'error',
      from: { path: '^scripts/' },
      to: { path: '^test/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
