/**
 * Answers for classifiers whose probabilities come out of a ZipMap: in JSON one {label: probability}
 * object per row (as onnxruntime's Python API), in text/csv one line per row as SageMaker's XGBoost
 * container answers (the positive class of a binary classifier, else every class), or what
 * `Accept: text/csv;output=label|probabilities|probability` asks for.
 */
import { errorOf } from '../errors';
import type { TensorInfo } from '../model-types';
import { acceptParameter } from './media-types';
import type { PlainTensor } from './tensor';

export const kCsvOutputParameter = 'output';
const kCsvOutputs = ['label', 'probabilities', 'probability'] as const;
export const notAcceptable = errorOf('MME_ERR_NOT_ACCEPTABLE');

export function probabilityRows(
  t: PlainTensor,
  classLabels: ReadonlyArray<number | string>,
): Array<Record<string, number>> {
  const classes = classLabels.length;
  const rows = t.dims[0] ?? 0;
  const data = t.data as Float32Array;
  return Array.from({ length: rows }, (_, r) =>
    Object.fromEntries(classLabels.map((label, c) => [String(label), data[r * classes + c]])),
  );
}

/** The tensor a text/csv answer holds for a classifier (a ZipMap output and at most one other, its label), else null. */
export function classifierCsvColumns(
  outputs: Record<string, PlainTensor>,
  infos: readonly TensorInfo[],
  accept: string,
): PlainTensor | null {
  const wanted = acceptParameter(accept, 'text/csv', kCsvOutputParameter);
  const probabilities = infos.find((info) => info.classLabels);
  const others = infos.filter((info) => info !== probabilities);
  if (!probabilities || others.length > 1) {
    if (wanted === undefined) return null;
    throw notAcceptable(
      `Accept text/csv;${kCsvOutputParameter}=${wanted} needs a classifier whose probabilities come out of a ZipMap and whose other output is its label; this model's outputs are ${infos.map((i) => i.name).join(', ')}`,
    );
  }
  if (wanted !== undefined && !(kCsvOutputs as readonly string[]).includes(wanted)) {
    throw notAcceptable(`Accept text/csv;${kCsvOutputParameter}=${wanted} is not one of ${kCsvOutputs.join(', ')}`);
  }
  const p = outputs[probabilities.name];
  const classes = probabilities.classLabels!.length;
  if (wanted === 'label') {
    if (others.length === 0)
      throw notAcceptable(
        `Accept text/csv;${kCsvOutputParameter}=label needs a label output, and this model has only ${probabilities.name}`,
      );
    return outputs[others[0].name];
  }
  if (wanted === 'probabilities' || (wanted === undefined && classes !== 2)) return p;
  if (classes !== 2)
    throw notAcceptable(
      `Accept text/csv;${kCsvOutputParameter}=probability is the positive-class probability of a binary classifier, and this one has ${classes} classes; ask for ${kCsvOutputParameter}=probabilities or ${kCsvOutputParameter}=label`,
    );
  return positiveClass(p);
}

/** Column 1 of a [rows, 2] tensor: the probability of the second class label (scikit-learn's classes_[1]). */
function positiveClass(p: PlainTensor): PlainTensor {
  const rows = p.dims[0] ?? 0;
  const data = new Float32Array(rows);
  for (let r = 0; r < rows; r++) data[r] = (p.data as Float32Array)[r * 2 + 1]!;
  return { type: p.type, dims: [rows], data };
}
