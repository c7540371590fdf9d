/**
 * Regenerates the example model store committed at the repo root (model-store/). The models are
 * deterministic, so rerunning this produces byte-identical files.
 *
 *   npx tsc -p tsconfig.json && node dist/scripts/make-example-models.js [outDir]
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { addModel, MlpSpec, mlpForward, mlpModel, writeModelDir } from '../harness/onnx-models';
import { printedHelp } from './cli-flags';

export const EXAMPLE_MLP: MlpSpec = { sizes: [4, 8, 3], seed: 1 };
/** text-generator's model: one-hot-ish context over ' a-z' → next-character scores (its handler.js is checked in). */
export const EXAMPLE_GENERATOR: MlpSpec = { sizes: [27, 64, 27], seed: 9 };
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
(\`mlpModel(${JSON.stringify(EXAMPLE_MLP)})\` in harness/onnx-models.ts; regenerate with
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
\`[batch, 16]\` (\`addModel()\` in harness/onnx-models.ts).

Example request body: \`{"inputs":{"x":[[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]]}}\`
`;

const GENERATOR_README = `# text-generator

A generator-style streaming example: [handler.js](handler.js) decodes text one character at a time,
running the model once per character, and streams each character as soon as it exists, as an LLM
server streams tokens. The model is an untrained MLP (\`mlpModel(${JSON.stringify(EXAMPLE_GENERATOR)})\` in
harness/onnx-models.ts, input \`input\` float32 \`[batch, 27]\`, output \`output\` float32
\`[batch, 27]\`), so the text is gibberish: the decode loop, the streaming and the cancellation are
what it shows.

The handler exports \`streaming = true\`, so the server runs its requests one per batch and sends
each \`context.sendIntermediate\` chunk to the client at once (HTTP/1.1 chunked encoding); the final
response is the last chunk. When the client disconnects, \`sendIntermediate\` returns false and the
handler stops.

| request field | meaning | default |
|---|---|---|
| \`prompt\` | starting text (letters and spaces; anything else reads as a space) | \`""\` |
| \`max_tokens\` | characters to generate, 1 to 1000 | 16 |
| \`delay_ms\` | pause before each character, 0 to 1000, to watch the stream arrive | 0 |

\`\`\`sh
curl -N -X POST http://127.0.0.1:8080/models/text-generator/invoke -H 'Content-Type: application/json' \\
  -d '{"prompt": "hello", "max_tokens": 5, "delay_ms": 300}'
\`\`\`

prints one line every 300 ms (\`application/jsonlines\`), then the whole text:

\`\`\`
{"token":"r"}
{"token":"y"}
{"token":"q"}
{"token":"q"}
{"token":"q"}
{"text":"ryqqq","tokens":5}
\`\`\`
`;

/** Model name → model.onnx bytes and README.md text, as committed under model-store/. */
export function exampleModels(): Record<string, { model: Uint8Array; readme: string }> {
  return {
    mlp: { model: mlpModel(EXAMPLE_MLP), readme: mlpReadme() },
    add: { model: addModel(), readme: ADD_README },
    'text-generator': { model: mlpModel(EXAMPLE_GENERATOR), readme: GENERATOR_README },
  };
}

function main(): void {
  const store = path.resolve(process.argv[2] ?? path.join(repoRoot(), 'model-store'));
  for (const [name, { model, readme }] of Object.entries(exampleModels())) {
    if (model.length > MAX_MODEL_BYTES)
      throw new Error(`${name}/model.onnx is ${model.length} bytes, over the ${MAX_MODEL_BYTES}-byte budget`);
    const dir = writeModelDir(store, name, model, { 'README.md': readme });
    console.log(`${path.relative(process.cwd(), dir)}/model.onnx (${model.length} bytes)`);
  }
}

// Imported by the test that checks the committed store is current; run as a script otherwise.
const USAGE = `Usage: node dist/scripts/make-example-models.js [OUT_DIR]
  Writes the example models (byte-identical on every run) into OUT_DIR, default the repository's model-store/.`;

if (require.main === module && !printedHelp(USAGE)) main();
