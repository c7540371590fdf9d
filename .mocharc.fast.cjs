/**
 * `npm run test:fast`, for the edit loop: the units and the lifecycle core on fake processes and the
 * virtual clock, with no server, worker process or onnxruntime session. The files below start real
 * processes and stay in `npm test` only.
 */
const full = require('./.mocharc.json');

module.exports = {
  ...full,
  spec: ['dist/test/{lifecycle,server,util,config,protocol,lint}/**/*.test.js'],
  ignore: [
    'dist/test/lifecycle/regressions.test.js',
    'dist/test/server/heap-room.test.js',
    'dist/test/server/hosts/body-handoff.test.js',
    'dist/test/server/workers/gpu-assignment.test.js',
    'dist/test/server/workers/spare-pool.test.js',
    'dist/test/config/unknown-keys.test.js',
  ],
};
