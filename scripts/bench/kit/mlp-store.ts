/** A model store of many tiny MLPs (16 → 32 → 4), one directory per model, for the cache benches. */
import fs from 'node:fs';
import path from 'node:path';
import { mlpModel } from '../../../harness/onnx-models';

/** The request body every model of the store accepts. */
export const MLP_STORE_BODY = JSON.stringify({ inputs: { input: [Array.from({ length: 16 }, (_, i) => i)] } });

/** Writes models m<from> … m<count-1> into `store`, each with its own weights. */
export function writeMlpStore(store: string, count: number, from = 0): void {
  for (let i = from; i < count; i++) {
    const dir = path.join(store, `m${i}`);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'model.onnx'), mlpModel({ sizes: [16, 32, 4], seed: i + 1 }));
  }
}
