import assert from 'node:assert/strict';
import {
  identityModel,
  IDENTITY_TYPES,
  mlpForward,
  mlpModel,
  multiIoModel,
  writeModelDir,
} from '../../harness/onnx-models';
import { loadModel } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';
import { npyFile, readFloat32Npy } from '../worker-process/npy-fixtures';
import { assertRowsClose } from '../helpers/assert-close';
import { csvRows } from '../../harness/boundary/answers';

const kMlp = { sizes: [4, 8, 3], seed: 7 };
const kRows = [
  [1, 2, 3, 4],
  [-1, 0.5, 0, 2],
];
const kSupported = /supported: application\/json, text\/csv, application\/x-npy/;

interface Reply {
  status: number;
  type: string;
  bytes: Buffer;
  json(): any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function post(
  t: TestServer,
  model: string,
  body: string | Buffer,
  headers: Record<string, string>,
): Promise<Reply> {
  const res = await fetch(`${t.url}/models/${model}/invoke`, { method: 'POST', body, headers });
  const bytes = Buffer.from(await res.arrayBuffer());
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    bytes,
    json: () => JSON.parse(bytes.toString()),
  };
}

describe('content types of the default handler (Content-Type in, Accept out)', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
    const loads = [
      loadModel(t, 'mlp', writeModelDir(t.store, 'mlp', mlpModel(kMlp))),
      loadModel(t, 'multi', writeModelDir(t.store, 'multi', multiIoModel())),
      ...IDENTITY_TYPES.map((type) =>
        loadModel(t, `id-${type}`, writeModelDir(t.store, `id-${type}`, identityModel(type))),
      ),
    ];
    for (const r of await Promise.all(loads)) assert.equal(r.status, 200, r.text);
  });
  after(async () => {
    await t.close();
  });

  describe("application/x-npy (the SageMaker SDK's NumpySerializer / NumpyDeserializer)", () => {
    for (const type of IDENTITY_TYPES) {
      it(`echoes a ${type} array through an identity model byte for byte as np.save wrote it`, async () => {
        const file = npyFile(`${type}.npy`);
        const res = await post(t, `id-${type}`, file, {
          'content-type': 'application/x-npy',
          accept: 'application/x-npy',
        });
        assert.equal(res.status, 200, res.bytes.toString());
        assert.equal(res.type, 'application/x-npy');
        assert.deepEqual(res.bytes, file);
      });
    }

    it('answers Fortran-ordered, big-endian and version 2.0 files in C order, little-endian, version 1.0', async () => {
      for (const name of ['float32-fortran.npy', 'float32-big-endian.npy', 'float32-version2.npy']) {
        const res = await post(t, 'id-float32', npyFile(name), {
          'content-type': 'application/x-npy',
          accept: 'application/x-npy',
        });
        assert.deepEqual(res.bytes, npyFile('float32.npy'), name);
      }
    });

    it("casts the SDK's float64 arrays to the model's float32 input and answers .npy float32", async () => {
      const res = await post(t, 'mlp', npyFile('mlp-rows-float64.npy'), {
        'content-type': 'application/x-npy',
        accept: 'application/x-npy',
      });
      assert.equal(res.status, 200, res.bytes.toString());
      const out = readFloat32Npy(res.bytes);
      assert.deepEqual(out.shape, [2, 3]);
      assertRowsClose([out.values.slice(0, 3), out.values.slice(3)], mlpForward(kMlp, kRows));
    });

    it('answers a bare JSON array for a .npy request by default', async () => {
      const res = await post(t, 'mlp', npyFile('mlp-rows-float64.npy'), { 'content-type': 'application/x-npy' });
      assert.equal(res.type, 'application/json; charset=utf-8');
      assertRowsClose(res.json(), mlpForward(kMlp, kRows));
    });

    it('answers a JSON request in .npy when asked', async () => {
      const res = await post(
        t,
        'id-float32',
        JSON.stringify({
          inputs: {
            x: [
              [1.5, -2, 3],
              [4, 5.25, -6],
            ],
          },
        }),
        { 'content-type': 'application/json', accept: 'application/x-npy' },
      );
      assert.deepEqual(res.bytes, npyFile('float32.npy'));
    });

    it('refuses a malformed file (400) and values the input type cannot hold', async () => {
      const truncated = await post(t, 'id-float32', npyFile('float32.npy').subarray(0, 140), {
        'content-type': 'application/x-npy',
      });
      assert.equal(truncated.status, 400);
      assert.match(
        truncated.json().message,
        /application\/x-npy body has 12 bytes of '<f4' data, but its shape \[2, 3\] needs 6 elements of 4 bytes \(24\)/,
      );
      const fractional = await post(t, 'id-int32', npyFile('float32.npy'), { 'content-type': 'application/x-npy' });
      assert.equal(fractional.status, 400);
      assert.match(fractional.json().message, /input x has element 1.5, but the model expects integers/);
    });
  });

  describe("text/csv (the SDK's CSVSerializer / CSVDeserializer)", () => {
    it('reads rows as np.savetxt writes them and answers CSV rows', async () => {
      const res = await post(t, 'mlp', npyFile('mlp-rows.csv'), { 'content-type': 'text/csv', accept: 'text/csv' });
      assert.equal(res.status, 200, res.bytes.toString());
      assert.equal(res.type, 'text/csv; charset=utf-8');
      assertRowsClose(csvRows(res.bytes.toString()), mlpForward(kMlp, kRows));
    });

    it('types the rows to the model input and writes integers as np.savetxt(fmt="%d") does', async () => {
      const res = await post(t, 'id-int32', npyFile('int32.csv'), {
        'content-type': 'text/csv; charset=utf-8',
        accept: 'text/csv',
      });
      assert.deepEqual(res.bytes, npyFile('int32.csv'));
    });

    it('answers CSV requests in JSON by default, and JSON requests in CSV when asked', async () => {
      const json = await post(t, 'mlp', '1,2,3,4\n-1,0.5,0,2\n', { 'content-type': 'text/csv' });
      assertRowsClose(json.json(), mlpForward(kMlp, kRows));
      const csv = await post(t, 'id-int32', JSON.stringify([[-2147483648, 7, 2147483647]]), {
        'content-type': 'application/json',
        accept: 'text/csv',
      });
      assert.deepEqual(csv.bytes, npyFile('int32.csv'));
    });

    it('refuses bad rows with 400 naming the row and column', async () => {
      const res = await post(t, 'mlp', '1,2,3,4\n1,2,three,4\n', { 'content-type': 'text/csv' });
      assert.equal(res.status, 400);
      assert.match(res.json().message, /"three" at row 2, column 3, which is not a number/);
    });
  });

  describe('negotiation', () => {
    it('answers an unsupported Content-Type with 415 listing what is supported', async () => {
      const res = await post(t, 'mlp', 'hello', { 'content-type': 'text/plain' });
      assert.equal(res.status, 415);
      assert.equal(res.json().errorCode, 'MME_ERR_UNSUPPORTED_MEDIA_TYPE');
      assert.match(res.json().message, kSupported);
    });

    it('answers an Accept it cannot meet with 406 listing what is supported', async () => {
      const res = await post(t, 'mlp', JSON.stringify(kRows), {
        'content-type': 'application/json',
        accept: 'image/png',
      });
      assert.equal(res.status, 406);
      assert.equal(res.json().errorCode, 'MME_ERR_NOT_ACCEPTABLE');
      assert.match(res.json().message, kSupported);
    });

    it('weighs Accept q-values and wildcards', async () => {
      const npy = await post(t, 'mlp', JSON.stringify(kRows), {
        'content-type': 'application/json',
        accept: 'text/csv;q=0.5, application/x-npy',
      });
      assert.equal(npy.type, 'application/x-npy');
      const csv = await post(t, 'mlp', JSON.stringify(kRows), { 'content-type': 'application/json', accept: 'text/*' });
      assert.equal(csv.type, 'text/csv; charset=utf-8');
    });

    it('says why one-array types cannot carry several inputs (400) or outputs (406)', async () => {
      const input = await post(t, 'multi', '1,2,3,4\n', { 'content-type': 'text/csv' });
      assert.equal(input.status, 400);
      assert.match(
        input.json().message,
        /a text\/csv body is one array, so it can only feed a model with one input, but this model has 2/,
      );
      const output = await post(t, 'multi', JSON.stringify({ inputs: { a: [[1, 2, 3, 4]], b: [[5, 6]] } }), {
        'content-type': 'application/json',
        accept: 'application/x-npy',
      });
      assert.equal(output.status, 406);
      assert.match(output.json().message, /this model has 2 outputs \(sum, b_out\); ask for Accept: application\/json/);
    });
  });
});

describe('SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT', () => {
  let t: TestServer;
  before(async () => {
    // The inference route reads it when it is mounted, as SageMaker's inference toolkit reads it at start-up.
    process.env.SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT = 'text/csv';
    try {
      t = await startTestServer();
    } finally {
      delete process.env.SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT;
    }
    assert.equal((await loadModel(t, 'mlp', writeModelDir(t.store, 'mlp', mlpModel(kMlp)))).status, 200);
  });
  after(async () => {
    await t.close();
  });

  it('sets the response type of requests without Accept or with Accept: */*', async () => {
    for (const accept of [undefined, '*/*']) {
      const res = await post(t, 'mlp', JSON.stringify(kRows), {
        'content-type': 'application/json',
        ...(accept ? { accept } : {}),
      });
      assert.equal(res.type, 'text/csv; charset=utf-8', String(accept));
      assertRowsClose(csvRows(res.bytes.toString()), mlpForward(kMlp, kRows));
    }
  });

  it('yields to an explicit Accept', async () => {
    const res = await post(t, 'mlp', JSON.stringify(kRows), {
      'content-type': 'application/json',
      accept: 'application/json',
    });
    assert.equal(res.type, 'application/json; charset=utf-8');
  });
});
