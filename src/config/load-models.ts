/** The load_models value: ALL, or a comma list of [name=]url. */
export interface ModelToLoad {
  /** Explicit name from `name=url`, else derived from the url (directory or archive base name). */
  readonly name: string;
  readonly url: string;
}

export type LoadModels = 'ALL' | readonly ModelToLoad[];

export function parseLoadModels(value: string): LoadModels | { problem: string } {
  if (value.trim().toUpperCase() === 'ALL') return 'ALL';
  const models: ModelToLoad[] = [];
  // Empty entries (a trailing comma, an empty value) are skipped rather than treated as errors.
  for (const entry of value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')) {
    const model = parseEntry(entry);
    if ('problem' in model) return model;
    if (models.some((m) => m.name === model.name)) return { problem: `model name "${model.name}" appears twice` };
    models.push(model);
  }
  return models;
}

function parseEntry(entry: string): ModelToLoad | { problem: string } {
  const eq = entry.indexOf('=');
  // MMS splits at the first '='; we only do so when the left side cannot be part of a url, so a
  // url with a query string (…/m.tar.gz?a=b) is not mistaken for name=url.
  if (eq >= 0 && !/[/:]/.test(entry.slice(0, eq))) {
    const name = entry.slice(0, eq).trim();
    const url = entry.slice(eq + 1).trim();
    if (name === '') return { problem: `"${entry}" has an empty model name` };
    if (url === '') return { problem: `"${entry}" has an empty url` };
    return { name, url };
  }
  const name = modelNameFromUrl(entry);
  if (name === '') return { problem: `cannot derive a model name from "${entry}"; write name=${entry}` };
  return { name, url: entry };
}

/**
 * Base name of the url without query, trailing slashes and a .tar.gz / .tgz suffix: the name of a
 * model load_models, a POST /models without model_name or a SageMaker TargetModel names by its url.
 */
export function modelNameFromUrl(url: string): string {
  // Only a url with a scheme has a query: in a plain path, '?' and '#' are ordinary characters.
  const path = /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url.replace(/[?#].*$/, '') : url;
  const base = path.replace(/\/+$/, '').split('/').pop() ?? '';
  return base.replace(/\.(tar\.gz|tgz)$/i, '');
}
