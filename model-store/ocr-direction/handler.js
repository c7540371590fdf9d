/**
 * PaddleOCR's text-direction classifier with PaddleOCR's own pre- and post-processing
 * (tools/infer/predict_cls.py): is this cropped line of text upright ("0") or upside down ("180")?
 *
 * Request (application/json): {"image": [[[r, g, b], ...], ...]}, an H x W x 3 array of 0-255 values.
 * Response: {"label": "0" | "180", "score": p}.
 *
 * Only preprocess and postprocess are here: the server's default inference runs the model and
 * merges the requests of a batch into one run.
 */
const HEIGHT = 48;
const WIDTH = 192;
const LABELS = ['0', '180'];

exports.preprocess = async (requests, ctx) => requests.map((req) => {
  try {
    return { [ctx.inputs[0].name]: toInput(readImage(req)) };
  } catch (err) {
    return err; // an Error in its slot fails this request alone
  }
});

exports.postprocess = async (outputs) => outputs.map((out) => {
  if (out instanceof Error) return out;
  const probs = Object.values(out)[0].data;
  const k = probs[1] > probs[0] ? 1 : 0;
  return { label: LABELS[k], score: probs[k] };
});

/** The image as rows of [r, g, b] pixels, checked. */
function readImage(req) {
  let body = req.data; // parsed by the server unless decode_input_request=false
  if (body === undefined) {
    try {
      body = JSON.parse(req.body.toString('utf8'));
    } catch {
      throw badRequest('the body must be JSON');
    }
  }
  const image = body && body.image;
  const ok = Array.isArray(image) && image.length > 0 && Array.isArray(image[0]) && image[0].length > 0
    && image.every((row) => Array.isArray(row) && row.length === image[0].length
      && row.every((px) => Array.isArray(px) && px.length === 3 && px.every((v) => typeof v === 'number' && v >= 0 && v <= 255)));
  if (!ok) throw badRequest('"image" must be an H x W x 3 array of numbers from 0 to 255');
  return image;
}

/**
 * PaddleOCR's resize_norm_img: keep the aspect ratio at height 48 (width at most 192), scale to
 * [-1, 1] as (x / 255 - 0.5) / 0.5, CHW in OpenCV's BGR order, zero-padded on the right.
 */
function toInput(image) {
  const h = image.length;
  const w = image[0].length;
  const resizedW = Math.min(WIDTH, Math.ceil((HEIGHT * w) / h));
  const data = new Float32Array(3 * HEIGHT * WIDTH);
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < resizedW; x++) {
      const rgb = bilinear(image, (x + 0.5) * (w / resizedW) - 0.5, (y + 0.5) * (h / HEIGHT) - 0.5);
      for (let c = 0; c < 3; c++) data[(c * HEIGHT + y) * WIDTH + x] = (rgb[2 - c] / 255 - 0.5) / 0.5;
    }
  }
  return { type: 'float32', dims: [1, 3, HEIGHT, WIDTH], data };
}

/** OpenCV's INTER_LINEAR sample at (sx, sy), pixel centres at integers, edges clamped. */
function bilinear(image, sx, sy) {
  const h = image.length;
  const w = image[0].length;
  const x = Math.min(Math.max(sx, 0), w - 1);
  const y = Math.min(Math.max(sy, 0), h - 1);
  const x0 = Math.floor(x);
  const y0 = Math.floor(y);
  const x1 = Math.min(x0 + 1, w - 1);
  const y1 = Math.min(y0 + 1, h - 1);
  const fx = x - x0;
  const fy = y - y0;
  return [0, 1, 2].map((c) => (image[y0][x0][c] * (1 - fx) + image[y0][x1][c] * fx) * (1 - fy)
    + (image[y1][x0][c] * (1 - fx) + image[y1][x1][c] * fx) * fy);
}

function badRequest(message) {
  return Object.assign(new Error(`${message}; send {"image": [[[r, g, b], ...], ...]}`), { status: 400 });
}
