import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { invalidModel } from '../errors';
import type { GraphOptimizationLevel, LoadedMessage, LoadMessage } from '../protocol/messages';
import type { ModelMetadata, TensorInfo } from '../model-types';
import { zipMapsAsTensors } from './graph-rewrite';
import { explainLoadFailure, unparsedModel } from './load-errors';
import { readOnnxFile, type OnnxFile } from './onnx-file';
import { domainName } from './opset-support';
import { levelFor } from './optimization-level';
import { describeOutputs, zipMapOutputs } from './served-outputs';

/** The session, and what the Loaded frame tells the server of it. */
export type OpenedSession = Pick<
  LoadedMessage,
  'executionProvider' | 'graphOptimizationLevel' | 'inputs' | 'outputs' | 'metadata'
> & {
  session: ort.InferenceSession;
};

/** Enough of a doc_string to recognise the model; the load frame is no place for a manual. */
const kDocStringChars = 1000;

/**
 * Reads the model file first (a ZipMap output makes onnxruntime load a rewritten graph from memory),
 * then opens the session with explicit thread counts: ORT's default (one spinning thread per core)
 * would start models × workers × cores threads.
 */
export async function openSession(msg: LoadMessage, warn: (line: string) => void): Promise<OpenedSession> {
  const model = await readModel(msg.onnxPath, sessionOptions(msg, 'all'));
  const zipMaps = zipMapOutputs(model);
  const source: string | Uint8Array = zipMaps.length ? zipMapsAsTensors(msg.onnxPath, model, zipMaps) : msg.onnxPath;
  const graphOptimizationLevel = levelFor(msg.graphOptimizationLevel, model);
  const options = sessionOptions(
    msg,
    graphOptimizationLevel,
    typeof source === 'string' ? undefined : path.dirname(msg.onnxPath),
  );
  try {
    const { session, executionProvider } = await create(source, options, msg.gpuId, warn);
    return {
      session,
      executionProvider,
      graphOptimizationLevel,
      inputs: describe(session.inputMetadata),
      outputs: describeOutputs(describe(session.outputMetadata), model, zipMaps),
      metadata: metadataOf(model),
    };
  } catch (err) {
    const message = String((err as Error)?.message ?? err);
    const explained = await explainLoadFailure(message, model);
    if (!explained) throw err;
    warn(`onnxruntime refused the model: ${message}`);
    throw explained;
  }
}

/** `externalDataDir`: where a model loaded from memory finds its external data files (with the same escape checks). */
function sessionOptions(
  msg: LoadMessage,
  graphOptimizationLevel: GraphOptimizationLevel,
  externalDataDir?: string,
): ort.InferenceSession.SessionOptions {
  return {
    intraOpNumThreads: msg.intraOpThreads,
    interOpNumThreads: msg.interOpThreads,
    executionMode: 'sequential',
    graphOptimizationLevel,
    // A shared host holds thousands of small sessions: the arena keeps each one's first-run buffers
    // (124 → 88 KiB a tiny MLP's session after a run, in the same process) and saves no run time at
    // these sizes; a dedicated worker's one session keeps it, for large tensors reused run after run.
    enableCpuMemArena: !msg.shared,
    extra: {
      session: {
        intra_op: { allow_spinning: '0' },
        inter_op: { allow_spinning: '0' },
        ...(externalDataDir === undefined ? {} : { model_external_initializers_file_folder_path: externalDataDir }),
      },
    },
  };
}

async function readModel(onnxPath: string, options: ort.InferenceSession.SessionOptions): Promise<OnnxFile> {
  try {
    return readOnnxFile(onnxPath);
  } catch (err) {
    // onnxruntime's parse error ("Protobuf parsing failed") is the one users search for, so it wins.
    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(onnxPath, options);
    } catch (ortErr) {
      throw unparsedModel(onnxPath, (ortErr as Error)?.message ?? String(ortErr));
    }
    await session.release();
    throw invalidModel(`${path.basename(onnxPath)} is not a readable ONNX model: ${(err as Error).message}`);
  }
}

async function create(
  source: string | Uint8Array,
  base: ort.InferenceSession.SessionOptions,
  gpuId: number,
  warn: (line: string) => void,
): Promise<{ session: ort.InferenceSession; executionProvider: string }> {
  // InferenceSession.create's overloads take a path or bytes, never the union.
  const open = (options: ort.InferenceSession.SessionOptions) =>
    typeof source === 'string'
      ? ort.InferenceSession.create(source, options)
      : ort.InferenceSession.create(source, options);
  if (gpuId < 0) return { session: await open(base), executionProvider: 'cpu' };
  try {
    // CUDA_VISIBLE_DEVICES (set by the parent) makes the assigned GPU device 0 in this process.
    return {
      session: await open({ ...base, executionProviders: [{ name: 'cuda', deviceId: 0 }] }),
      executionProvider: 'cuda',
    };
  } catch (err) {
    warn(
      `GPU ${gpuId} assigned but the CUDA execution provider is not available (${(err as Error).message.split('\n')[0]}); running on CPU`,
    );
    return { session: await open(base), executionProvider: 'cpu' };
  }
}

function metadataOf(model: OnnxFile): ModelMetadata {
  return {
    irVersion: model.irVersion,
    producerName: model.producerName,
    producerVersion: model.producerVersion,
    domain: model.domain,
    modelVersion: model.modelVersion,
    docString: model.docString.slice(0, kDocStringChars),
    opsets: Object.fromEntries([...model.opsets].map(([domain, version]) => [domainName(domain), version])),
    metadataProps: model.metadataProps,
  };
}

function describe(meta: readonly ort.InferenceSession.ValueMetadata[]): TensorInfo[] {
  return meta.map((m) => {
    if (!m.isTensor) throw new Error(`${m.name} is not a tensor, but served-outputs.ts lets only tensors through`);
    return {
      name: m.name,
      type: m.type,
      shape: m.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : typeof d === 'string' ? d : -1)),
    };
  });
}
