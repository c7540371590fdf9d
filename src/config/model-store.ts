/**
 * model_store and what depends on it. A store someone named must exist (else it shows up late: a
 * scandir stack after "listening", a 404 per invoke). The default /opt/ml/models is nobody's choice:
 * missing, the server starts without a store and loads by url (SageMaker's MME contract). Under
 * SAGEMAKER_MULTI_MODEL the platform owns the directory and passes absolute urls: not checked there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { configError } from '../errors';
import type { Settings } from './settings';
import type { ServerConfig } from './types';

/** Why `dir` is not a readable directory ("/x does not exist"), or null when it is one. */
export type DirProblem = (dir: string) => string | null;

export function modelStoreConfig(
  s: Settings,
  multiModel: boolean,
  dirProblem: DirProblem,
): Pick<ServerConfig, 'modelStore' | 'modelStoreNote' | 'loadModels' | 'modelRoots'> {
  const named = s.has('model_store');
  // Written empty: no store, on purpose.
  const configured = named && s.raw('model_store')?.trim() === '' ? null : s.read('model_store');
  const problem = configured === null || (named && multiModel) ? null : dirProblem(configured);
  if (problem !== null && named) {
    throw configError(
      `config key model_store: ${problem}; create it, or point model_store (or --model-store) at the directory that holds your model folders`,
    );
  }
  const modelStore = problem === null ? configured : null;
  const loadModels = s.read('load_models');
  if (loadModels === 'ALL' && modelStore === null) {
    throw configError(
      `config key load_models is ALL but ${problem === null ? 'model_store is not set' : `model_store's default ${problem}`} (expected model_store=DIR, e.g. model_store=/opt/ml/models, or --model-store DIR)`,
    );
  }
  const rawRoots = s.read('model_roots');
  // SageMaker puts models under /opt/ml/models; locally they live in model_store.
  const roots = rawRoots === null ? [configured, '/opt/ml/models'] : rawRoots.split(',').map((r) => r.trim());
  return {
    modelStore,
    modelStoreNote: storeNote(modelStore, problem),
    loadModels,
    modelRoots: [...new Set(roots.filter((r): r is string => !!r))],
  };
}

function storeNote(store: string | null, problem: string | null): string {
  if (store !== null) return `model store ${store}: models are looked up there by name; POST /models also loads a url`;
  if (problem === null) return 'no model store (model_store is empty): models load by url through POST /models';
  return `no model store: model_store's default ${problem}; models load by url through POST /models (mount a model folder there, or set model_store, to load them by name)`;
}

/** The real file system's answer, relative paths against `cwd`. */
export function directoryProblem(cwd: string): DirProblem {
  return (store) => {
    const dir = path.resolve(cwd, store);
    const described = dir === store ? dir : `${dir} (${store} from ${cwd})`;
    try {
      return fs.statSync(dir).isDirectory() ? null : `${described} is not a directory`;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return `${described} ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? (err as Error).message})`}`;
    }
  };
}
