/**
 * A generator-style streaming handler: it decodes text one character at a time, running the model
 * once per character, and streams each character to the client as soon as it exists, the way an
 * LLM server streams tokens. The model is an untrained MLP with fixed random weights, so the text
 * is gibberish: the decode loop, the streaming and the cancellation are what this example shows.
 *
 * Request (application/json): {"prompt": "hello", "max_tokens": 16, "delay_ms": 0}
 * Response (application/jsonlines): one {"token": "x"} line per character as it is generated, then
 * {"text": "...", "tokens": n}.
 */
const ALPHABET = ' abcdefghijklmnopqrstuvwxyz';
/** How much of the earlier context each new character keeps: the model's only memory. */
const DECAY = 0.7;
const MAX_TOKENS = 1000;
const MAX_DELAY_MS = 1000;

// Chunks go straight to the client, so the server runs this handler's requests one per batch.
exports.streaming = true;

exports.handle = (requests, ctx) => Promise.all(requests.map((req, i) => generate(req, i, ctx).catch((err) => err)));

async function generate(req, i, ctx) {
  const { prompt, maxTokens, delayMs } = parseRequest(req);
  ctx.setResponseContentType(i, 'application/jsonlines');
  const context = new Float32Array(ALPHABET.length);
  const push = (ch) => {
    for (let k = 0; k < context.length; k++) context[k] *= DECAY;
    context[ALPHABET.indexOf(ch)] += 1;
  };
  for (const ch of prompt) push(ch);
  let text = '';
  for (let n = 0; n < maxTokens; n++) {
    // Awaiting between tokens is what lets the worker hear that the client has gone.
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    const { output } = await ctx.run({ input: { type: 'float32', dims: [1, context.length], data: context.slice() } });
    const ch = ALPHABET[argmax(output.data)];
    if (!ctx.sendIntermediate(i, `${JSON.stringify({ token: ch })}\n`)) {
      console.log(`client disconnected: stopped after ${n} of ${maxTokens} tokens`);
      return '';
    }
    await ctx.drained(i);
    text += ch;
    push(ch);
  }
  return `${JSON.stringify({ text, tokens: text.length })}\n`;
}

function parseRequest(req) {
  let body = req.data; // parsed by the server unless decode_input_request=false
  if (body === undefined && req.body.length > 0) {
    try {
      body = JSON.parse(req.body.toString('utf8'));
    } catch {
      throw badRequest('the body must be JSON');
    }
  }
  const { prompt = '', max_tokens: maxTokens = 16, delay_ms: delayMs = 0 } = body && typeof body === 'object' ? body : {};
  if (typeof prompt !== 'string') throw badRequest('"prompt" must be a string');
  if (!Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > MAX_TOKENS) throw badRequest(`"max_tokens" must be an integer from 1 to ${MAX_TOKENS}`);
  if (!Number.isInteger(delayMs) || delayMs < 0 || delayMs > MAX_DELAY_MS) throw badRequest(`"delay_ms" must be an integer from 0 to ${MAX_DELAY_MS}`);
  // The model knows 26 letters and the space: anything else reads as a space.
  return { prompt: [...prompt.toLowerCase()].map((ch) => (ALPHABET.includes(ch) ? ch : ' ')).join(''), maxTokens, delayMs };
}

function argmax(values) {
  let best = 0;
  for (let k = 1; k < values.length; k++) if (values[k] > values[best]) best = k;
  return best;
}

function badRequest(message) {
  return Object.assign(new Error(`${message}; send {"prompt": "hello", "max_tokens": 16}`), { status: 400 });
}
