#!/usr/bin/env node
/**
 * `node dist/src/main.js [serve] [--mms-config FILE] [--model-store DIR] [--models name=path,...]`
 * SageMaker runs the image with the single argument `serve`.
 */
import { parseArgs, USAGE } from './config/cli';
import { loadConfig } from './config/load';
import { isMmeError } from './errors';
import { MmeServer } from './server/mme-server';
import { exitOnUnhandledRejection } from './unhandled-rejection';

const log = (line: string) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);
exitOnUnhandledRejection(log);

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (parseArgs(argv).help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig(process.env, argv);
  log(`config: ${config.configFile ?? 'built-in defaults'}${config.unknownKeys.length ? `; unknown keys ignored: ${config.unknownKeys.join(', ')}` : ''}`);
  const server = new MmeServer(config, { log });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      log(`${signal} again: exiting now`);
      process.exit(1);
    }
    stopping = true;
    log(`${signal}: draining for up to ${config.shutdownTimeoutSeconds} s (shutdown_timeout), then stopping workers`);
    server.close(config.shutdownTimeoutSeconds * 1000).then(() => process.exit(0), (err) => {
      log(`shutdown failed: ${(err as Error).message}`);
      process.exit(1);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  await server.start();
}

main().catch((err) => {
  process.stderr.write(`${isMmeError(err) ? err.message : (err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
