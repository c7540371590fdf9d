/** The repository's root, for the files a bench, a test or a router reads from it (deploy/, model-store/, bench-results/). */
import path from 'node:path';

/** Compiled to dist/harness/, so the root is two levels up wherever the importer sits. */
export const kRepoRoot = path.join(__dirname, '..', '..');
