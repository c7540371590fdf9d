/**
 * The in-process limit: plain node:http and onnxruntime-node in ONE process, decoding and encoding
 * the same bodies (JSON, .npy, CSV, OIP v2 binary) with the same codecs as the workers. It would block under real load (run()
 * holds the event loop) but no HTTP + JSON server in Node can do the same work faster.
 * With a batch size and a delay it batches as the server does (in-process-batcher.ts).
 * Usage: node baseline-server.js MODEL.onnx [BATCH_SIZE MAX_BATCH_DELAY_MS]
 *   → prints "listening on http://127.0.0.1:PORT"
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as ort from 'onnxruntime-node';
import { HEADER_LENGTH_HEADER, oipContentType } from '../../../src/oip/binary-body';
import { decoderFor, encodeAnswer, encoderFor } from '../../../src/worker-process/content-types';
import type { Feeds } from '../../../src/worker-process/json-codec';
import { openSession } from '../../../src/worker-process/session';
import { RequestBudget, type PlainTensor } from '../../../src/worker-process/tensor';
import { InProcessBatcher } from './in-process-batcher';

async function main(): Promise<void> {
  const onnxPath = process.argv[2];
  const opened = await openSession(
    {
      modelName: 'baseline',
      modelDir: '.',
      onnxPath,
      handlerPath: null,
      batchSize: 1,
      gpuId: -1,
      intraOpThreads: 1,
      interOpThreads: 1,
      graphOptimizationLevel: 'all',
      decodeInputRequest: false,
      concurrentBatches: false,
      maxResponseSize: Infinity,
      maxStreamBuffer: Infinity,
      maxRequestElements: Infinity,
      workerId: 'baseline',
      slot: 0,
      shared: false,
    },
    console.error,
  );
  const run = async (feeds: Feeds): Promise<Record<string, PlainTensor>> => {
    const ortFeeds: Record<string, ort.Tensor> = {};
    for (const [name, t] of Object.entries(feeds))
      ortFeeds[name] = new ort.Tensor(t.type as never, t.data as never, t.dims);
    const out = await opened.session.run(ortFeeds);
    return Object.fromEntries(
      Object.entries(out).map(([n, t]) => [
        n,
        { type: t.type, dims: t.dims as number[], data: t.data as Float32Array },
      ]),
    );
  };
  const [batchSize, maxBatchDelayMs] = process.argv.slice(3).map(Number);
  const batcher =
    batchSize > 1
      ? new InProcessBatcher(
          { batchSize, maxBatchDelayMs },
          opened.inputs.map((i) => i.name),
          run,
        )
      : null;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    const respond = async () => {
      const body = Buffer.concat(chunks);
      // OIP v2 binary: the header's length travels as a header over REST, as a parameter to the codec.
      const headerLength = req.headers[HEADER_LENGTH_HEADER];
      const contentType =
        typeof headerLength === 'string'
          ? oipContentType(Number(headerLength))
          : (req.headers['content-type'] ?? 'application/json');
      const decoded = decoderFor(contentType).decode(
        { body, contentType, accept: contentType, headers: {}, requestId: '' },
        opened.inputs,
        new RequestBudget(Infinity, body.length),
      );
      const outputs = await (batcher ? batcher.submit(decoded.feeds) : run(decoded.feeds));
      const codec = encoderFor(req.headers.accept || 'application/json');
      const { body: answer, contentType: answerType } = encodeAnswer(codec, outputs, {
        format: decoded.format,
        modelName: 'baseline',
        accept: req.headers.accept || 'application/json',
        outputs: opened.outputs,
      });
      res.writeHead(200, { 'content-type': answerType, 'content-length': Buffer.byteLength(answer) });
      res.end(answer);
    };
    // A body the codecs refuse must not take the bench server down: it answers with the message.
    req.on('end', () => {
      respond().catch((err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String((err as Error)?.message ?? err));
      });
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () =>
    console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
