#!/usr/bin/env node
/**
 * A small client for the SageMaker MME container API (what SageMaker itself calls), for trying a
 * running server or image by hand: the package bin `mme-client`, `npm run -s mme-client -- ARGS` here.
 * USAGE below lists its commands; PATH is as the container sees it (in the image, /opt/ml/models/NAME).
 * The response body goes to stdout; a non-2xx answer exits 1 with the body on stderr.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import {
  credentials,
  InterceptingCall,
  type ChannelCredentials,
  type ClientOptions,
  type Interceptor,
} from '@grpc/grpc-js';
import type { V2InferRequest } from '../oip/types';
import { connect, modelInferRequest, unaryCall, v2Response } from './grpc-calls';
import { tlsCredentials, type TlsFiles } from './grpc-tls';

const USAGE = `Usage: mme-client [--url URL] COMMAND
  load NAME PATH [--workers N]   POST /models {"model_name": NAME, "url": PATH}
  list                           GET /models (every page)
  describe NAME                  GET /models/NAME
  invoke NAME JSON|@FILE         POST /models/NAME/invoke  [--content-type TYPE] [--target-model T]
  unload NAME                    DELETE /models/NAME
  scale NAME MIN [MAX]           PUT /models/NAME?min_worker=MIN&max_worker=MAX&synchronous=true (answers once scaled)
  ping                           GET /ping
  v2-infer NAME JSON|@FILE       POST /v2/models/NAME/infer (Open Inference Protocol v2 JSON)
  grpc-infer NAME JSON|@FILE     KServe gRPC ModelInfer of a v2 JSON request, tensors in raw contents
  grpc-predict NAME JSON|@FILE   TorchServe gRPC Predictions (input "data"); --stream: StreamPredictions
  grpc-ping                      TorchServe gRPC Ping
--url defaults to $MME_URL, else http://127.0.0.1:8080; --grpc to $MME_GRPC, else 127.0.0.1:7070.
Servers with tokens or TLS:
  --token T              inference_token, for invoke, v2-infer and grpc-* (default $MME_INFERENCE_TOKEN)
  --management-token T   management_token, for load, list, describe, unload, scale ($MME_MANAGEMENT_TOKEN)
  --cacert FILE          PEM CA that signed the server's certificate (https:// URL, --grpc-tls)
  --cert FILE --key FILE PEM client certificate and key, for tls_client_ca_file (mutual TLS)
  --grpc-tls             gRPC over TLS (implied by --cacert or --cert)`;

class UsageError extends Error {}

/** A PEM file named by an option, read now, so a wrong path is a usage error and not a TLS failure later. */
function pemFile(option: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new UsageError(`${option} ${file}: ${(err as Error).message}`);
  }
}

/** The options that take any text, by the field they set. */
type TextOption = 'url' | 'contentType' | 'targetModel' | 'grpc' | 'inferenceToken' | 'managementToken';
const kTextOptions = new Map<string, TextOption>([
  ['--url', 'url'],
  ['--content-type', 'contentType'],
  ['--target-model', 'targetModel'],
  ['--grpc', 'grpc'],
  ['--token', 'inferenceToken'],
  ['--management-token', 'managementToken'],
]);

/** The options: each as the command line sets it, else its default. */
type Options = ReturnType<typeof parse>;

function parse(argv: readonly string[]) {
  const opts = {
    url: process.env.MME_URL || 'http://127.0.0.1:8080',
    workers: null as number | null,
    contentType: 'application/json',
    targetModel: null as string | null,
    grpc: process.env.MME_GRPC || '127.0.0.1:7070',
    stream: false,
    inferenceToken: process.env.MME_INFERENCE_TOKEN || null,
    managementToken: process.env.MME_MANAGEMENT_TOKEN || null,
    tls: {} as TlsFiles,
    grpcTls: false,
    words: [] as string[],
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`${arg} needs a value`);
      return v;
    };
    const field = kTextOptions.get(arg);
    if (field !== undefined) {
      opts[field] = value();
      continue;
    }
    switch (arg) {
      case '--workers': {
        const n = Number(value());
        if (!Number.isInteger(n) || n < 1) throw new UsageError('--workers must be a whole number >= 1');
        opts.workers = n;
        break;
      }
      case '--stream':
        opts.stream = true;
        break;
      case '--cacert':
      case '--cert':
        opts.tls[arg === '--cert' ? 'cert' : 'ca'] = pemFile(arg, value());
        opts.grpcTls = true;
        break;
      case '--key':
        opts.tls.key = pemFile(arg, value());
        break;
      case '--grpc-tls':
        opts.grpcTls = true;
        break;
      case '-h':
      case '--help':
        // Asked for, so it is the answer: stdout and success, unlike a usage error.
        process.stdout.write(`${USAGE}\n`);
        process.exit(0);
      default:
        if (arg.startsWith('--')) throw new UsageError(`unknown option ${arg}`);
        opts.words.push(arg);
    }
  }
  if ((opts.tls.cert === undefined) !== (opts.tls.key === undefined))
    throw new UsageError('--cert and --key go together (a client certificate and its key)');
  opts.url = opts.url.replace(/\/+$/, '');
  return opts;
}

/**
 * One HTTP exchange. node:http(s) rather than fetch: fetch cannot be given a CA or a client
 * certificate without undici's own Agent, which is not a dependency.
 */
function call(
  opts: Pick<Options, 'tls'>,
  method: string,
  url: string,
  body?: string | Buffer,
  headers: Record<string, string> = {},
): Promise<string> {
  const secure = url.startsWith('https:');
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).request(url, { method, headers, ...(secure ? opts.tls : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 299) reject(new Error(`${method} ${url} → ${status}\n${text}`));
        else resolve(text);
      });
    });
    req.on('error', (err) => reject(new Error(`${method} ${url} failed: ${err.message}`)));
    req.end(body);
  });
}

function bearer(token: string | null): Record<string, string> {
  return token === null ? {} : { authorization: `Bearer ${token}` };
}

/** How to reach the gRPC listener: TLS with the same files as https, every call with the inference token. */
function grpcChannel(opts: Options): { options: ClientOptions; channel: ChannelCredentials } {
  const channel = opts.grpcTls ? tlsCredentials(opts.grpc, opts.tls) : credentials.createInsecure();
  const token = opts.inferenceToken;
  // An interceptor rather than call credentials, which grpc-js refuses on a plain-text channel.
  const withToken: Interceptor = (options, next) =>
    new InterceptingCall(next(options), {
      start(metadata, listener, start) {
        if (token !== null) metadata.set('authorization', `Bearer ${token}`);
        start(metadata, listener);
      },
    });
  return { options: token === null ? {} : { interceptors: [withToken] }, channel };
}

function bodyOf(payload: string): Buffer {
  return payload.startsWith('@') ? readFileSync(payload.slice(1)) : Buffer.from(payload);
}

async function withGrpc(opts: Options, fn: (clients: ReturnType<typeof connect>) => Promise<string>): Promise<string> {
  const { options, channel } = grpcChannel(opts);
  const clients = connect(opts.grpc, options, channel);
  try {
    return await fn(clients);
  } finally {
    clients.close();
  }
}

function need(words: string[], n: number, what: string): string[] {
  if (words.length !== n + 1) throw new UsageError(`${words[0]} takes ${what}`);
  return words.slice(1);
}

async function main(): Promise<void> {
  const opts = parse(process.argv.slice(2));
  const { url, words } = opts;
  const name = (n: string) => encodeURIComponent(n);
  const json = { 'content-type': 'application/json', accept: 'application/json' };
  // Management calls carry management_token's bearer, data-plane calls inference_token's.
  const manage = (method: string, path: string, body?: string) =>
    call(opts, method, `${url}${path}`, body, { ...(body === undefined ? {} : json), ...bearer(opts.managementToken) });
  const infer = (path: string, body: Buffer, headers: Record<string, string>) =>
    call(opts, 'POST', `${url}${path}`, body, { ...headers, ...bearer(opts.inferenceToken) });
  let out: string;
  switch (words[0]) {
    case 'load': {
      const [model, path] = need(words, 2, 'NAME PATH');
      const body: Record<string, unknown> = { model_name: model, url: path };
      if (opts.workers !== null) body.initial_workers = opts.workers;
      out = await manage('POST', '/models', JSON.stringify(body));
      break;
    }
    case 'list': {
      need(words, 0, 'no arguments');
      const models: unknown[] = [];
      let token: string | undefined;
      do {
        const page = JSON.parse(
          await manage('GET', `/models${token ? `?next_page_token=${encodeURIComponent(token)}` : ''}`),
        ) as { models: unknown[]; nextPageToken?: string };
        models.push(...page.models);
        token = page.nextPageToken;
      } while (token);
      out = JSON.stringify({ models }, null, 2);
      break;
    }
    case 'describe':
    case 'unload': {
      const [model] = need(words, 1, 'NAME');
      out = await manage(words[0] === 'unload' ? 'DELETE' : 'GET', `/models/${name(model)}`);
      break;
    }
    case 'invoke': {
      const [model, payload] = need(words, 2, 'NAME JSON (or @FILE)');
      const body = bodyOf(payload);
      const headers: Record<string, string> = { 'content-type': opts.contentType };
      if (opts.targetModel !== null) headers['x-amzn-sagemaker-target-model'] = opts.targetModel;
      out = await infer(`/models/${name(model)}/invoke`, body, headers);
      break;
    }
    case 'scale': {
      const [model, min, max = min] =
        words.length === 3 ? need(words, 2, 'NAME MIN [MAX]') : need(words, 3, 'NAME MIN [MAX]');
      if (![min, max].every((n) => /^\d+$/.test(n)))
        throw new UsageError(`scale takes whole numbers of workers, e.g. scale ${model} 2`);
      out = await manage('PUT', `/models/${name(model)}?min_worker=${min}&max_worker=${max}&synchronous=true`);
      break;
    }
    case 'ping':
      need(words, 0, 'no arguments');
      out = await call(opts, 'GET', `${url}/ping`);
      break;
    case 'v2-infer': {
      const [model, payload] = need(words, 2, 'NAME JSON (or @FILE)');
      out = await infer(`/v2/models/${name(model)}/infer`, bodyOf(payload), json);
      break;
    }
    case 'grpc-infer': {
      const [model, payload] = need(words, 2, 'NAME JSON (or @FILE)');
      const request = modelInferRequest(model, JSON.parse(bodyOf(payload).toString()) as V2InferRequest);
      out = await withGrpc(opts, async (c) =>
        JSON.stringify(v2Response(await unaryCall(c.kserve, 'ModelInfer', request))),
      );
      break;
    }
    case 'grpc-predict': {
      const [model, payload] = need(words, 2, 'NAME JSON (or @FILE)');
      const request = { model_name: model, input: { data: bodyOf(payload) } };
      out = await withGrpc(opts, async (c) => {
        if (!opts.stream)
          return (await unaryCall<{ prediction: Buffer }>(c.torchserve, 'Predictions', request)).prediction.toString();
        // Each streamed message goes out as it arrives.
        for await (const m of c.torchserve.StreamPredictions(request) as AsyncIterable<{ prediction: Buffer }>)
          process.stdout.write(m.prediction);
        return '';
      });
      break;
    }
    case 'grpc-ping':
      need(words, 0, 'no arguments');
      out = await withGrpc(opts, async (c) => (await unaryCall<{ health: string }>(c.torchserve, 'Ping', {})).health);
      break;
    default:
      throw new UsageError(words[0] === undefined ? '' : `unknown command ${words[0]}`);
  }
  process.stdout.write(out.endsWith('\n') ? out : `${out}\n`);
}

main().catch((err: Error) => {
  if (err instanceof UsageError) {
    process.stderr.write(`${err.message ? `${err.message}\n` : ''}${USAGE}\n`);
    process.exit(2);
  }
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
