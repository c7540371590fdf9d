/**
 * The import rules `npm test` enforces (npm run deps). Type-only imports count
 * (tsPreCompilationDeps): one vanishes from the JavaScript, yet it still puts a responsibility on
 * the wrong side of a boundary.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-file-cycle',
      comment: 'A cycle between files: one of them does the other\'s job, or both share one that belongs in a third.',
      severity: 'error',
      from: {},
      to: { circular: true },
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
      comment: 'The worker process runs models, never the server: it may use the protocol, the shared OIP code, errors and utilities, nothing of the server, HTTP or gRPC, even through another module.',
      severity: 'error',
      from: { path: '^src/worker-process/' },
      to: { path: '^src/(server|http|grpc)/', reachable: true },
    },
    {
      name: 'protocol-takes-no-side',
      comment: 'The frame protocol is shared by both processes: it imports neither side.',
      severity: 'error',
      from: { path: '^src/protocol/' },
      to: { path: '^src/(server|http|grpc|worker-process)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
