#!/usr/bin/env node
/**
 * `node dist/src/main.js [serve] [--mms-config FILE] [--model-store DIR] [--models name=path,...]`
 * SageMaker runs the image with the single argument `serve`.
 */
import { parseArgs, USAGE } from './config/cli';
import { loadConfig } from './config/load';
import { isMmeError } from './errors';
import { createLog } from './logger';
import { MmeServer } from './mme-server';
import { keepHeapRoom } from './heap-room';
import { readyLine } from './ready-line';
import { StopSignals } from './stop-signals';
import { exitOnUnhandledRejection } from './unhandled-rejection';
import { realClock } from './util/clock';

/** Text at info until the config names the log's format and level. */
let log = createLog({ format: 'text', level: 'info' });
exitOnUnhandledRejection((line) => log(line, { level: 'error' }));

// Compiled to dist/src/, beside which the package's package.json sits two levels up (also in the image).
const { version: kVersion } = require('../../package.json') as { version: string };

async function main(): Promise<void> {
  const started = performance.now();
  const argv = process.argv.slice(2);
  const args = parseArgs(argv);
  if (args.help || args.version) {
    process.stdout.write(args.help ? `${USAGE}\n` : `${kVersion}\n`);
    return;
  }
  const config = loadConfig(process.env, argv);
  log = createLog({ format: config.logFormat, level: config.logLevel });
  log(
    `sagemaker-mme-node ${kVersion} (Node ${process.version}); config: ${config.configFile ?? 'built-in defaults'}${config.unknownKeys.length ? `; unknown keys ignored: ${config.unknownKeys.join(', ')}` : ''}`,
  );
  log(config.modelStoreNote);
  const server = new MmeServer(config, { log });
  const signals = new StopSignals(realClock);
  const stop = (signal: string) => {
    const action = signals.received();
    if (action === 'repeat') return;
    if (action === 'force') {
      log(`${signal} again: exiting now`);
      process.exit(1);
    }
    log(`${signal}: draining for up to ${config.shutdownTimeoutSeconds} s (shutdown_timeout), then stopping workers`);
    server.close(config.shutdownTimeoutSeconds * 1000).then(
      ({ drained, cutOff }) => {
        log(`stopped: ${drained} requests finished in the drain, ${cutOff} cut off when their workers were killed`, {
          level: 'info',
        });
        process.exit(0);
      },
      (err) => {
        log(`shutdown failed: ${(err as Error).message}`, { level: 'error' });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  keepHeapRoom();
  await server.start();
  log(
    readyLine(config, {
      elapsedMs: performance.now() - started,
      budgetBytes: server.manager.lifecycle.budgetBytes,
      loaded: server.manager.registry.servingCount(),
      failed: server.startupFailures,
      modelLimits: server.manager.workers.limits.describe(),
    }),
  );
}

/** Listen errors a user causes and fixes: what to change, in one line (the stack says nothing to them). */
const kListenProblems: Readonly<Record<string, string>> = {
  EADDRINUSE: 'is already in use, often by an earlier server still running',
  EACCES: 'may not be used by this user (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'is not an address of this machine',
};

function startFailure(err: unknown): string {
  if (isMmeError(err)) return err.message;
  // Node's own listen error, or grpc-js's, which quotes Node's inside its message.
  const listen = /listen (E[A-Z]+): .*? (\S+?)\]?$/.exec(String((err as Error)?.message));
  const problem = listen ? kListenProblems[listen[1]] : undefined;
  if (problem !== undefined) {
    return `cannot listen on ${listen![2]}: the address ${problem} (${listen![1]}); stop the other process, or move this server: SAGEMAKER_BIND_TO_PORT=<port> moves both APIs, or set inference_address / management_address (and grpc_inference_port) in config.properties`;
  }
  return (err as Error).stack ?? String(err);
}

main().catch((err) => {
  process.stderr.write(`${startFailure(err)}\n`);
  process.exit(1);
});
