/**
 * Composes the model's handler (MMS's service): a custom module may export `initialize`, and either
 * `handle` or any of `preprocess` / `inference` / `postprocess`; the default handler fills in the rest.
 */
import path from 'node:path';
import { invalidModel, MmeError } from '../errors';
import type { HandlerContext, HandlerRequest } from './context';
import * as defaults from './default-handler';

export type BatchFn = (batch: unknown[], ctx: HandlerContext) => unknown[] | Promise<unknown[]>;

export interface HandlerModule {
  /** The handler sends intermediate chunks (context.sendIntermediate); its requests then run one per batch. */
  streaming?: boolean;
  initialize?: (ctx: HandlerContext) => unknown;
  handle?: (requests: HandlerRequest[], ctx: HandlerContext) => unknown[] | Promise<unknown[]>;
  preprocess?: BatchFn;
  inference?: BatchFn;
  postprocess?: BatchFn;
}

export interface Handler {
  readonly streaming: boolean;
  initialize(ctx: HandlerContext): Promise<void>;
  handle(requests: HandlerRequest[], ctx: HandlerContext): Promise<unknown[]>;
}

export function loadHandler(handlerPath: string | null, modelDir: string): Handler {
  const mod = handlerPath ? requireHandler(handlerPath, modelDir) : {};
  const pre = (mod.preprocess ?? defaults.preprocess) as BatchFn;
  const inf = (mod.inference ?? defaults.inference) as BatchFn;
  const post = (mod.postprocess ?? defaults.postprocess) as BatchFn;
  const handle = mod.handle
    ? mod.handle
    : async (requests: HandlerRequest[], ctx: HandlerContext) => post(await inf(await pre(requests, ctx), ctx), ctx);
  return {
    streaming: mod.streaming === true,
    async initialize(ctx) {
      try {
        if (mod.initialize) await mod.initialize(ctx);
      } catch (err) {
        const at =
          handlerPath && err instanceof Error
            ? sourcePosition(err, path.resolve(modelDir, handlerPath), modelDir)
            : null;
        if (at !== null) (err as Error).message += ` (at ${at})`;
        throw withoutRequireStack(err);
      }
    },
    async handle(requests, ctx) {
      let out: unknown;
      try {
        out = await handle(requests, ctx);
      } catch (err) {
        // A head set wrong before the throw must not ride on the error answers either.
        ctx.checkResponses();
        throw withoutRequireStack(err);
      }
      const mistakes = ctx.checkResponses();
      if (!Array.isArray(out) || out.length !== requests.length) {
        throw new MmeError(
          'MME_ERR_MODEL_ERROR',
          `the handler returned ${Array.isArray(out) ? `${out.length} results` : typeof out} for a batch of ${requests.length}; it must return one result per request`,
        );
      }
      // A request whose head is faulty gets the error saying so, in place of its result.
      return (out as unknown[]).map((result, i) => mistakes[i] ?? result);
    },
  };
}

/** A failed require's message, without the require stack of server paths Node appends to it: clients read it. */
function withoutRequireStack(err: unknown): unknown {
  if (err instanceof Error && (err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND')
    err.message = err.message.split('\n')[0]!;
  return err;
}

/** Drops the handler module from require's cache: a shared host that unloads a model must not keep its code and state. */
export function unloadHandler(handlerPath: string, modelDir: string): void {
  delete require.cache[path.resolve(modelDir, handlerPath)];
}

function requireHandler(handlerPath: string, modelDir: string): HandlerModule {
  const file = path.resolve(modelDir, handlerPath);
  try {
    const mod = require(file) as HandlerModule & { default?: HandlerModule };
    return mod.default && typeof mod.default === 'object' ? mod.default : mod;
  } catch (err) {
    // First line only: Node appends a require stack of server paths the client must not see.
    const e = err as NodeJS.ErrnoException;
    const reason =
      e.code === 'MODULE_NOT_FOUND' && e.message.includes(file)
        ? 'the file does not exist in the model directory'
        : String(e.message).split('\n')[0];
    const at = err instanceof Error ? sourcePosition(err, file, modelDir) : null;
    throw invalidModel(
      `the model's handler ${path.basename(file)} failed to load: ${reason}${at === null ? '' : ` (at ${at})`}`,
    );
  }
}

/**
 * Where in the handler's source `err` arose (model-directory-relative file:line:column), or null. A
 * SyntaxError from require has no frame there: V8 tops its stack with "file:line", the line and a caret.
 */
function sourcePosition(err: Error, file: string, modelDir: string): string | null {
  const stack = String(err.stack);
  const relative = path.relative(modelDir, file);
  const lines = stack.split('\n');
  const head = lines[0].startsWith(`${file}:`) ? lines[0].slice(file.length + 1) : '';
  if (err instanceof SyntaxError && /^\d+$/.test(head)) {
    const caret = lines[2]?.indexOf('^') ?? -1;
    return `${relative}:${head}${caret >= 0 ? `:${caret + 1}` : ''}`;
  }
  for (const line of lines) {
    const i = line.indexOf(`${file}:`);
    const m = i < 0 ? null : /^:(\d+):(\d+)/.exec(line.slice(i + file.length));
    if (m) return `${relative}:${m[1]}:${m[2]}`;
  }
  return null;
}
