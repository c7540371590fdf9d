import * as ort from 'onnxruntime-node';
import type { LoadMessage, TensorInfo } from '../protocol/frames';

export interface OpenedSession {
  session: ort.InferenceSession;
  executionProvider: string;
  inputs: TensorInfo[];
  outputs: TensorInfo[];
}

/**
 * Opens the model with explicit thread counts: every worker of every model is its own process,
 * so ORT's default (one thread per core, spinning) would start models × workers × cores threads.
 */
export async function openSession(msg: LoadMessage, warn: (line: string) => void): Promise<OpenedSession> {
  const base: ort.InferenceSession.SessionOptions = {
    intraOpNumThreads: msg.intraOpThreads,
    interOpNumThreads: msg.interOpThreads,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
  };
  let session: ort.InferenceSession;
  let executionProvider = 'cpu';
  if (msg.gpuId >= 0) {
    try {
      // CUDA_VISIBLE_DEVICES (set by the parent) makes the assigned GPU device 0 in this process.
      session = await ort.InferenceSession.create(msg.onnxPath, { ...base, executionProviders: [{ name: 'cuda', deviceId: 0 }] });
      executionProvider = 'cuda';
    } catch (err) {
      warn(`GPU ${msg.gpuId} assigned but the CUDA execution provider is not available (${(err as Error).message.split('\n')[0]}); running on CPU`);
      session = await ort.InferenceSession.create(msg.onnxPath, base);
    }
  } else {
    session = await ort.InferenceSession.create(msg.onnxPath, base);
  }
  return { session, executionProvider, inputs: describe(session.inputMetadata), outputs: describe(session.outputMetadata) };
}

function describe(meta: readonly ort.InferenceSession.ValueMetadata[]): TensorInfo[] {
  return meta.map((m) => (m.isTensor ? { name: m.name, type: m.type, shape: m.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : typeof d === 'string' ? d : -1)) } : { name: m.name, type: 'non-tensor', shape: [] }));
}
