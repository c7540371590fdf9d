/**
 * text/csv bodies ⇄ one tensor, as the SageMaker SDK's CSVSerializer and the built-in algorithms
 * exchange them: one line per row, comma-separated numbers, no header row.
 */
import { quote } from '../errors';
import type { TensorInfo } from '../model-types';
import { checkShape } from './json-codec';
import { fromNested, jsonElements } from './nested-arrays';
import { invalidInput, Tensor, type PlainTensor, type RequestBudget } from './tensor';

/** NumPy / Python spellings of the non-finite floats (np.savetxt writes nan and inf). */
const kNonFinite: ReadonlyMap<string, number> = new Map([
  ['nan', NaN],
  ['inf', Infinity],
  ['infinity', Infinity],
]);

const invalid = (message: string) => invalidInput(`the text/csv body ${message}`);

/** Rows of numbers → a [rows, columns] tensor of the input's type. Blank lines are skipped, as np.loadtxt does. */
export function decodeCsv(body: Buffer, info: TensorInfo, budget: RequestBudget): Tensor {
  const rows = body
    .toString('utf8')
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '')
    .map((line) => line.split(','));
  if (rows.length === 0) throw invalid('has no rows');
  const columns = rows[0].length;
  rows.forEach((cells, r) => {
    if (cells.length !== columns)
      throw invalid(
        `has ${cells.length} values on row ${r + 1} but ${columns} on row 1; every row needs the same number`,
      );
  });
  const dims = [rows.length, columns];
  checkShape(info, dims);
  return Tensor.build(info.type, dims, budget, `input ${info.name}`, () => {
    const values = rows.map((cells, r) =>
      cells.map((cell, c) => cellValue(cell.trim().replace(/^"(.*)"$/, '$1'), info.type, r, c)),
    );
    return fromNested(info.type, values, dims, `input ${info.name}`);
  });
}

/** A cell as fromNested expects it for `type`: strings stay strings, and int64 stays a decimal string so it stays exact. */
function cellValue(text: string, type: string, row: number, column: number): unknown {
  if (type === 'string') return text;
  if ((type === 'int64' || type === 'uint64') && /^-?\d+$/.test(text)) return text;
  if (type === 'bool' && (text === 'true' || text === 'false')) return text === 'true';
  const sign = text.startsWith('-') ? -1 : 1;
  const special = kNonFinite.get(text.replace(/^[+-]/, '').toLowerCase());
  const value = special !== undefined ? sign * special : text === '' ? NaN : Number(text);
  if (Number.isNaN(value) && special === undefined)
    throw invalid(`has ${quote(text)} at row ${row + 1}, column ${column + 1}, which is not a number`);
  return value;
}

/** One line per row of the first axis; higher ranks flatten their trailing axes into the columns. */
export function encodeCsv(t: PlainTensor): string {
  const values = jsonElements(t).map(cellText);
  const rows = t.dims.length === 0 ? 1 : t.dims[0];
  const columns = rows === 0 ? 0 : values.length / rows;
  let out = '';
  for (let r = 0; r < rows; r++) out += `${values.slice(r * columns, (r + 1) * columns).join(',')}\n`;
  return out;
}

/** RFC 4180 quoting, needed only by string tensors. */
function cellText(value: unknown): string {
  if (typeof value !== 'string' || !/[",\r\n]/.test(value)) return String(value);
  return `"${value.replace(/"/g, '""')}"`;
}
