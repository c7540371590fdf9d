/**
 * Which requests the invoke routes take, and which model each is for: case-insensitive, a trailing
 * slash allowed, a name one percent-decoded segment, whatever the method (another one is a 405).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { modelNameFromUrl } from '../config/load-models';
import { MmeError } from '../errors';
import type { ModelRegistry } from '../gateway/models';

export interface InvokePath {
  /** The route's pattern: error lines name it, never the client's path. */
  route: string;
  /** The model the path names; null on /invocations, whose model a header or the query names. */
  name: string | null;
  /** /v2 (the Open Inference Protocol's request and answer shapes). */
  oip: boolean;
  /** Only under /v2/models/{name}/versions/{version}/infer. */
  version?: string;
  path: string;
  query: string;
}

const kRoutes: ReadonlyArray<{ pattern: RegExp; route: string; oip: boolean }> = [
  { pattern: /^\/models\/([^/]+)\/invoke\/?$/i, route: '/models/:name/invoke', oip: false },
  { pattern: /^\/invocations\/?$/i, route: '/invocations', oip: false },
  { pattern: /^\/predictions\/([^/]+)\/?$/i, route: '/predictions/:name', oip: false },
  { pattern: /^\/v2\/models\/([^/]+)\/infer\/?$/i, route: '/v2/models/:name/infer', oip: true },
  {
    pattern: /^\/v2\/models\/([^/]+)\/versions\/([^/]+)\/infer\/?$/i,
    route: '/v2/models/:name/versions/:version/infer',
    oip: true,
  },
];

/** An absolute-form request target's scheme and authority (RFC 9112 §3.2.2), which name no route. */
const kAbsoluteForm = /^[a-z][a-z\d+.-]*:\/\/[^/?#]*/i;

/** A name segment decoded; one that is not valid percent-encoding stays as sent. */
function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function invokePath(url: string): InvokePath | null {
  let target = url;
  if (target[0] !== '/') {
    const authority = kAbsoluteForm.exec(target);
    if (!authority) return null;
    target = target.slice(authority[0].length) || '/';
  }
  const end = target.search(/[?#]/);
  const path = end === -1 ? target : target.slice(0, end);
  const query = end === -1 || target[end] === '#' ? '' : target.slice(end + 1).split('#', 1)[0];
  for (const { pattern, route, oip } of kRoutes) {
    const m = pattern.exec(path);
    if (!m) continue;
    return {
      route,
      oip,
      name: m[1] === undefined ? null : decoded(m[1]),
      ...(m[2] === undefined ? {} : { version: decoded(m[2]) }),
      path,
      query,
    };
  }
  return null;
}

const kTargetModel = 'x-amzn-sagemaker-target-model';
/** Ray Serve's model-multiplexing header. */
const kMultiplexedModel = 'serve_multiplexed_model_id';

/**
 * SageMaker sends the TargetModel in a header; locally Ray Serve's header or ?model_name= may name
 * the model. With none, the only loaded model serves, as in single-model mode.
 */
export function invocationsTarget(
  headers: IncomingHttpHeaders,
  query: string,
  registry: Pick<ModelRegistry, 'registered' | 'onlyModel' | 'servingCount'>,
): string {
  const header =
    (headers[kMultiplexedModel] as string | undefined) || (headers[kTargetModel] as string | undefined) || '';
  const named = query ? new URLSearchParams(query).getAll('model_name') : [];
  // A repeated model_name names no one model.
  const wanted = header || (named.length === 1 ? named[0] : '');
  if (wanted) {
    return registry.registered(wanted) ? wanted : modelNameFromUrl(wanted);
  }
  const only = registry.onlyModel();
  if (only !== null) return only;
  const loaded = registry.servingCount();
  throw new MmeError(
    'MME_ERR_BAD_REQUEST',
    loaded === 0
      ? 'No model is loaded. Load one with POST /models, then invoke it.'
      : `${loaded} models are loaded; name the target with the X-Amzn-SageMaker-Target-Model header or POST /models/{name}/invoke.`,
  );
}
