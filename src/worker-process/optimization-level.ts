/**
 * onnx_graph_optimization_level=auto: the level one model's session gets. The extended and layout
 * fusions keep ~30 KiB in every session whatever the graph; a graph of a few nodes has almost
 * nothing to fuse, so there they cost a tiny model a third of its memory to save a few µs a run
 * (a tiny MLP's Gemm+Relu), while a graph of many nodes runs 1.2-1.6× faster with them.
 * Measured: bench-results/part28-model-count/README.md.
 */
import type { GraphOptimizationLevel, LoadMessage } from '../protocol/messages';
import type { OnnxFile } from './onnx-file';

/** A two-layer MLP (Gemm, Relu, Gemm) is 3; a five-layer one (9) already runs 1.07-1.16× faster fused. */
export const kAutoBasicMaxNodes = 4;
/** From here the ~30 KiB is under 3 % of the session, and large Gemms gain from their fused activation. */
export const kAutoBasicMaxGraphBytes = 1 << 20;

export function levelFor(setting: LoadMessage['graphOptimizationLevel'], model: OnnxFile): GraphOptimizationLevel {
  if (setting !== 'auto') return setting;
  const small =
    model.nodes.length <= kAutoBasicMaxNodes && model.graph.end - model.graph.start <= kAutoBasicMaxGraphBytes;
  return small ? 'basic' : 'all';
}
