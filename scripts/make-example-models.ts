/**
 * Regenerates the example model store committed at the repo root (model-store/). The models are
 * deterministic, so rerunning this produces byte-identical files.
 *
 *   npx tsc -p tsconfig.json && node dist/scripts/make-example-models.js [outDir]
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { addModel, MlpSpec, mlpForward, mlpModel, writeModelDir } from '../test/fixtures/onnx-models';

export const EXAMPLE_MLP: MlpSpec = { sizes: [4, 8, 3], seed: 1 };
const EXAMPLE_ROWS = [[1, 2, 3, 4]];
const MAX_MODEL_BYTES = 100 * 1024;

/** The compiled script lives in dist/scripts/, the source in scripts/: find the root either way. */
function repoRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${__dirname}`);
  }
}

function mlpReadme(): string {
  const expected = mlpForward(EXAMPLE_MLP, EXAMPLE_ROWS).map((row) => row.map((v) => Number(v.toFixed(4))));
  const body = JSON.stringify({ inputs: { input: EXAMPLE_ROWS } });
  return `# mlp

A two-layer perceptron, 4 → 8 (ReLU) → 3, with fixed pseudo-random float32 weights
(\`mlpModel(${JSON.stringify(EXAMPLE_MLP)})\` in test/fixtures/onnx-models.ts; regenerate with
scripts/make-example-models.ts).

| | name | type | shape |
|---|---|---|---|
| input | \`input\` | float32 | \`[batch, 4]\` (batch is dynamic) |
| output | \`output\` | float32 | \`[batch, 3]\` |

Example request body (one row):

\`\`\`json
${body}
\`\`\`

\`\`\`sh
curl -X POST http://localhost:8080/models -H 'Content-Type: application/json' \\
  -d '{"model_name": "mlp", "url": "'"$PWD"'/model-store/mlp"}'
curl -X POST http://localhost:8080/models/mlp/invoke -H 'Content-Type: application/json' \\
  -d '${body}'
\`\`\`

The \`output\` tensor for that row is approximately \`${JSON.stringify(expected)}\`.
`;
}

const ADD_README = `# add

The "tiny" model: \`y = x + 1\`, input \`x\` float32 \`[batch, 16]\` (batch is dynamic), output \`y\` float32
\`[batch, 16]\` (\`addModel()\` in test/fixtures/onnx-models.ts).

Example request body: \`{"inputs":{"x":[[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]]}}\`
`;

/** Model name → model.onnx bytes and README.md text, as committed under model-store/. */
export function exampleModels(): Record<string, { model: Uint8Array; readme: string }> {
  return {
    mlp: { model: mlpModel(EXAMPLE_MLP), readme: mlpReadme() },
    add: { model: addModel(), readme: ADD_README },
  };
}

function main(): void {
  const store = path.resolve(process.argv[2] ?? path.join(repoRoot(), 'model-store'));
  for (const [name, { model, readme }] of Object.entries(exampleModels())) {
    if (model.length > MAX_MODEL_BYTES) throw new Error(`${name}/model.onnx is ${model.length} bytes, over the ${MAX_MODEL_BYTES}-byte budget`);
    const dir = writeModelDir(store, name, model, { 'README.md': readme });
    console.log(`${path.relative(process.cwd(), dir)}/model.onnx (${model.length} bytes)`);
  }
}

// Imported by the test that checks the committed store is current; run as a script otherwise.
if (require.main === module) main();
