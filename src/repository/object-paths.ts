import path from 'node:path';
import { invalidModel, quote } from '../errors';

/** Linux's NAME_MAX: a longer path segment cannot be a file name (ENAMETOOLONG). */
const kMaxSegmentBytes = 255;

/**
 * The keys below the model's prefix as relative paths that cannot leave the download directory, or
 * a 400 for this model naming the key to rename: an empty, '.' or '..' segment, a segment too long
 * for a file name, or a key that is both a file and the directory of another. Checked before any
 * download, so the file system never sees them and the store is not taken for down.
 */
export function relativePaths(keys: string[], name: string): string[] {
  const refuse = (key: string, why: string) =>
    invalidModel(`Model ${name}: model_repository holds an object ${quote(key)} ${why}; rename it`);
  const dirs = new Set<string>();
  for (const key of keys) {
    const parts = key.split('/');
    if (parts.some((p) => p === '' || p === '.' || p === '..'))
      throw refuse(key, "whose key has an empty, '.' or '..' path segment");
    if (parts.some((p) => Buffer.byteLength(p) > kMaxSegmentBytes || p.includes('\0')))
      throw refuse(key, `whose key has a path segment longer than ${kMaxSegmentBytes} bytes or with a NUL`);
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  const clash = keys.find((k) => dirs.has(k));
  if (clash !== undefined) throw refuse(clash, 'that is both a file and the directory of other objects');
  return keys.map((k) => k.split('/').join(path.sep));
}
