/**
 * The default handler: decode each request by its Content-Type, run the batch (merging compatible
 * requests along the batch axis), encode each result as its Accept asks (content-types.ts). A slot
 * holding an Error fails that request alone; custom handlers may use the same convention.
 */
import { MmeError, shortageError } from '../errors';
import type { TensorInfo } from '../model-types';
import type { HandlerContext, HandlerRequest } from './context';
import { decoderFor, encodeAnswer, encoderFor } from './content-types';
import { emptyFeeds, type Feeds, type JsonFormat, type OutputSelection } from './json-codec';
import { RequestBudget, Tensor, type PlainTensor } from './tensor';

export type Slot<T> = T | Error;

export async function preprocess(requests: HandlerRequest[], ctx: HandlerContext): Promise<Array<Slot<Feeds>>> {
  return requests.map((req, i) => {
    try {
      const budget = new RequestBudget(ctx.maxRequestElements, req.body.length);
      const { feeds, format, id, selection } = decoderFor(req.contentType).decode(req, ctx.inputs, budget);
      Object.assign(ctx.state[i], { format, id, selection });
      return feeds;
    } catch (err) {
      return err as Error;
    }
  });
}

/** Feeds as this module's preprocess makes them, or a custom preprocess's plain tensors. */
type AnyFeeds = Record<string, PlainTensor>;

export async function inference(inputs: Array<Slot<AnyFeeds>>, ctx: HandlerContext): Promise<Array<Slot<AnyFeeds>>> {
  const results: Array<Slot<AnyFeeds>> = inputs.slice();
  const groups = new Map<string, number[]>();
  inputs.forEach((feeds, i) => {
    if (feeds instanceof Error) return;
    const key = batchKey(feeds, ctx.inputs) ?? `solo:${i}`;
    const group = groups.get(key);
    if (group) group.push(i);
    else groups.set(key, [i]);
  });
  for (const members of groups.values()) {
    const feeds = members.map((i) => inputs[i] as AnyFeeds);
    const merged = feeds.length > 1 ? await runMerged(ctx, feeds) : null;
    for (const [k, i] of members.entries()) results[i] = merged ? merged[k] : await runSafely(ctx, feeds[k]);
  }
  return results;
}

/** Requests share a run when every input has the same type and trailing dims and the model's first dimension is free. */
function batchKey(feeds: AnyFeeds, infos: readonly TensorInfo[]): string | null {
  let key = '';
  let rows = -1;
  for (const info of infos) {
    const t = Object.hasOwn(feeds, info.name) ? feeds[info.name] : undefined;
    if (!t || t.dims.length === 0 || (typeof info.shape[0] === 'number' && info.shape[0] >= 0)) return null;
    if (rows >= 0 && t.dims[0] !== rows) return null;
    rows = t.dims[0];
    key += `${info.name}:${t.type}:${t.dims.slice(1).join('x')};`;
  }
  return key;
}

/**
 * One run for several requests, split by the rows each brought; any disagreement (a malformed
 * custom tensor, an output not per row) runs them one by one instead, so a bad request fails alone.
 */
async function runMerged(ctx: HandlerContext, members: AnyFeeds[]): Promise<Feeds[] | null> {
  const tensors = members.map((f) => asTensors(f, ctx.inputs));
  if (tensors.some((t) => t === null)) return null;
  const checked = tensors as Feeds[];
  const rows = checked.map((f) => f[ctx.inputs[0].name].dims[0]);
  const total = rows.reduce((a, b) => a + b, 0);
  const feeds = emptyFeeds();
  for (const info of ctx.inputs) feeds[info.name] = Tensor.concat(checked.map((f) => f[info.name]));
  const out = await runSafely(ctx, feeds);
  if (out instanceof Error) return null; // retried one by one, so only the culprit fails
  const pieces = new Map<string, Tensor[]>();
  for (const name of Object.keys(out)) {
    const t = asTensor(out[name]);
    if (!t || t.dims[0] !== total) return null;
    pieces.set(name, t.split(rows));
  }
  return checked.map((_, k) => {
    const answer = emptyFeeds();
    for (const [name, split] of pieces) answer[name] = split[k];
    return answer;
  });
}

function asTensors(feeds: AnyFeeds, infos: readonly TensorInfo[]): Feeds | null {
  const out = emptyFeeds();
  for (const info of infos) {
    const t = asTensor(feeds[info.name]);
    if (!t) return null;
    out[info.name] = t;
  }
  return out;
}

function asTensor(t: PlainTensor | undefined): Tensor | null {
  try {
    return t ? Tensor.of(t) : null;
  } catch {
    return null;
  }
}

async function runSafely(ctx: HandlerContext, feeds: AnyFeeds): Promise<Slot<AnyFeeds>> {
  try {
    return await ctx.run(feeds);
  } catch (err) {
    return classifyRunError(err as Error);
  }
}

const kInputFaults =
  /invalid (dimensions|rank|feed|input)|unexpected input data type|input name|got invalid|shape mismatch|does not match/i;

function classifyRunError(err: Error): MmeError {
  const msg = String(err?.message ?? err);
  const shortage = shortageError(msg, 'onnxruntime');
  if (shortage) return shortage;
  if (kInputFaults.test(msg)) return new MmeError('MME_ERR_INVALID_INPUT', `onnxruntime rejected the input: ${msg}`);
  return new MmeError('MME_ERR_MODEL_ERROR', `onnxruntime failed to run the model: ${msg}`);
}

/** Accept is negotiated here, not in preprocess: a custom postprocess may produce types this one cannot. */
export async function postprocess(
  outputs: Array<Slot<AnyFeeds>>,
  ctx: HandlerContext,
): Promise<Array<Slot<string | Buffer>>> {
  return outputs.map((out, i) => {
    if (out instanceof Error) return out;
    try {
      const codec = encoderFor(ctx.requests[i].accept);
      const format = (ctx.state[i].format as JsonFormat | undefined) ?? 'named';
      const { body, contentType } = encodeAnswer(codec, out, {
        format,
        modelName: ctx.modelName,
        id: ctx.state[i].id as string | undefined,
        accept: ctx.requests[i].accept,
        outputs: ctx.outputs,
        selection: ctx.state[i].selection as OutputSelection | undefined,
      });
      if (!ctx.responses[i].contentType) ctx.responses[i].contentType = contentType;
      return body;
    } catch (err) {
      return err as Error;
    }
  });
}
