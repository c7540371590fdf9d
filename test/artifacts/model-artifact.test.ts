import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { asyncReads, syncReads } from '../../src/artifacts/dir-reads';
import { resolveArtifact } from '../../src/artifacts/model-artifact';
import { addModel, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { assertMmeError, useTempDir } from './helpers';

const MODEL = addModel();

// Every case under both forms of the reads: the synchronous one (local model roots) must answer as the asynchronous one.
for (const [kind, reads] of [
  ['asynchronous', asyncReads],
  ['synchronous', syncReads],
] as const)
  describe(`resolveArtifact: urls and model directories (${kind} reads)`, () => {
    const tmp = useTempDir('artifact-dir-');
    const cacheDir = () => path.join(tmp(), 'cache');
    const resolve = (url: string) => resolveArtifact(url, { cacheDir: cacheDir(), reads });

    /** Creates files under <tmp>/<name>; a Uint8Array or string is a file, null a directory. */
    function layout(name: string, files: Record<string, string | Uint8Array | null>): string {
      const root = path.join(tmp(), name);
      mkdirSync(root, { recursive: true });
      for (const [rel, content] of Object.entries(files)) {
        const p = path.join(root, rel);
        if (content === null) {
          mkdirSync(p, { recursive: true });
        } else {
          mkdirSync(path.dirname(p), { recursive: true });
          writeFileSync(p, content);
        }
      }
      return root;
    }

    describe('url checks', () => {
      const remote = [
        'http://169.254.169.254/latest/meta-data/',
        'https://example.com/model.tar.gz',
        's3://bucket/model.tar.gz',
        'file:///etc/passwd',
        'ftp://host/m',
        'HTTP://EXAMPLE.COM/',
        'https:relative',
        's3:bucket/key',
        'file:/etc',
        'gs://bucket/m',
        '',
        '   ',
        'has\0nul',
      ];
      for (const url of remote) {
        it(`refuses ${JSON.stringify(url)} with 400`, () =>
          assertMmeError(
            resolve(url),
            'MME_ERR_BAD_REQUEST',
            /only local directories or \.tar\.gz files are accepted/,
          ));
      }

      for (const url of [
        '/dev',
        '/dev/null',
        '/dev/zero',
        '/proc/self',
        '/proc/self/root',
        '/sys',
        '/sys/kernel',
        '/tmp/../proc/self',
        '/dev/../dev/shm',
      ]) {
        it(`refuses the system path ${url} with 400`, () =>
          assertMmeError(resolve(url), 'MME_ERR_BAD_REQUEST', /only local directories/));
      }

      it('refuses a link that resolves into /proc', () => {
        const link = path.join(tmp(), 'sneaky');
        symlinkSync('/proc/self', link);
        return assertMmeError(resolve(link), 'MME_ERR_BAD_REQUEST', /only local directories/);
      });

      it("answers 404 with MMS's message for a missing path", async () => {
        const url = path.join(tmp(), 'missing', 'model');
        await assertMmeError(resolve(url), 'MME_ERR_MODEL_NOT_FOUND');
        await assert.rejects(resolve(url), {
          message: `Model not found in model store: ${JSON.stringify(url)}`,
          status: 404,
        });
      });

      it('answers 404 when a path component is a file', () => {
        writeFileSync(path.join(tmp(), 'file'), 'x');
        return assertMmeError(resolve(path.join(tmp(), 'file', 'model')), 'MME_ERR_MODEL_NOT_FOUND');
      });

      it('answers 404 for a dangling link', () => {
        symlinkSync(path.join(tmp(), 'nowhere'), path.join(tmp(), 'dangling'));
        return assertMmeError(resolve(path.join(tmp(), 'dangling')), 'MME_ERR_MODEL_NOT_FOUND');
      });

      it('refuses a file that is neither a directory nor a .tar.gz with 400', async () => {
        const dir = writeModelDir(tmp(), 'm', MODEL);
        await assertMmeError(
          resolve(path.join(dir, 'model.onnx')),
          'MME_ERR_BAD_REQUEST',
          /only local directories or \.tar\.gz/,
        );
        writeFileSync(path.join(tmp(), 'm.tar'), 'x');
        await assertMmeError(resolve(path.join(tmp(), 'm.tar')), 'MME_ERR_BAD_REQUEST');
      });

      it('follows a link for the url itself (a mounted model store)', async () => {
        const dir = writeModelDir(tmp(), 'real', MODEL);
        symlinkSync(dir, path.join(tmp(), 'linked'));
        const a = await resolve(path.join(tmp(), 'linked'));
        assert.equal(a.onnxPath, path.join(dir, 'model.onnx'));
      });

      it('accepts a relative path and a trailing slash', async () => {
        const dir = writeModelDir(tmp(), 'rel', MODEL);
        const a = await resolve(`${path.relative(process.cwd(), dir)}/`);
        assert.equal(a.dir, dir);
      });
    });

    describe('choosing the .onnx file', () => {
      it('takes the single .onnx at the top level, whatever its name', async () => {
        const root = layout('m', { 'resnet.onnx': MODEL, 'README.md': 'x' });
        const a = await resolve(root);
        assert.equal(a.url, root);
        assert.equal(a.dir, root);
        assert.equal(a.onnxPath, path.join(root, 'resnet.onnx'));
        assert.equal(a.onnxBytes, MODEL.length);
        assert.equal(a.handlerPath, null);
        assert.deepEqual(a.modelConfig, {});
        assert.equal(a.extractedTo, null);
      });

      it('prefers model.onnx among several', async () => {
        const root = layout('m', { 'a.onnx': MODEL, 'model.onnx': MODEL, 'z.onnx': MODEL });
        assert.equal((await resolve(root)).onnxPath, path.join(root, 'model.onnx'));
      });

      it('refuses several without a model.onnx, listing them', () => {
        const root = layout('m', { 'b.onnx': MODEL, 'a.onnx': MODEL });
        return assertMmeError(
          resolve(root),
          'MME_ERR_INVALID_MODEL',
          /several \.onnx files and none is named model\.onnx: a\.onnx, b\.onnx/,
        );
      });

      it('looks one directory down when the top level has none, and reads handler and config there', async () => {
        const root = layout('m', {
          'README.md': 'x',
          '1/model.onnx': MODEL,
          '1/handler.js': '//',
          '1/model-config.json': '{"maxWorkers": 2}',
          'handler.js': '// not this one',
        });
        const a = await resolve(root);
        assert.equal(a.dir, path.join(root, '1'));
        assert.equal(a.onnxPath, path.join(root, '1', 'model.onnx'));
        assert.equal(a.handlerPath, path.join(root, '1', 'handler.js'));
        assert.deepEqual(a.modelConfig, { maxWorkers: 2 });
      });

      it('prefers a top-level .onnx over nested ones', async () => {
        const root = layout('m', { 'top.onnx': MODEL, 'sub/model.onnx': MODEL });
        assert.equal((await resolve(root)).onnxPath, path.join(root, 'top.onnx'));
      });

      it('prefers the one model.onnx among nested files', async () => {
        const root = layout('m', { 'a/other.onnx': MODEL, 'b/model.onnx': MODEL });
        assert.equal((await resolve(root)).onnxPath, path.join(root, 'b', 'model.onnx'));
      });

      it('refuses nested model.onnx files in two subdirectories', () => {
        const root = layout('m', { 'a/model.onnx': MODEL, 'b/model.onnx': MODEL });
        return assertMmeError(
          resolve(root),
          'MME_ERR_INVALID_MODEL',
          /more than one is named model\.onnx: a\/model\.onnx, b\/model\.onnx/,
        );
      });

      it('caps the listing at ten names', () => {
        const files = Object.fromEntries(
          Array.from({ length: 12 }, (_, i) => [`m${String(i).padStart(2, '0')}.onnx`, MODEL]),
        );
        return assertMmeError(resolve(layout('m', files)), 'MME_ERR_INVALID_MODEL', /m09\.onnx, \.\.\. \(12 in all\)$/);
      });

      for (const [what, files] of [
        ['an empty directory', {}],
        ['only other files', { 'model.pt': 'x', 'sub/readme': 'x' }],
        ['a .onnx two levels down', { 'a/b/model.onnx': MODEL }],
        ['only a directory named x.onnx', { 'x.onnx': null }],
      ] as const) {
        it(`refuses ${what} with 400`, () =>
          assertMmeError(
            resolve(layout('m', files)),
            'MME_ERR_INVALID_MODEL',
            /must hold a \.onnx file \(at its top level or one directory down\)/,
          ));
      }

      it('ignores dot-files such as macOS "._model.onnx" companions', async () => {
        const root = layout('m', { '._model.onnx': 'AppleDouble', 'model.onnx': MODEL, '.hidden/x.onnx': MODEL });
        assert.equal((await resolve(root)).onnxPath, path.join(root, 'model.onnx'));
      });

      it('refuses an empty .onnx file', () =>
        assertMmeError(
          resolve(layout('m', { 'model.onnx': '' })),
          'MME_ERR_INVALID_MODEL',
          /model\.onnx in .* is empty/,
        ));

      it('matches the extension case-insensitively', async () => {
        const root = layout('m', { 'MODEL.ONNX': MODEL });
        assert.equal((await resolve(root)).onnxPath, path.join(root, 'MODEL.ONNX'));
      });
    });

    describe('never follows links inside the model directory', () => {
      it('refuses a model.onnx that is a symbolic link', () => {
        const root = layout('m', {});
        symlinkSync('/etc/passwd', path.join(root, 'model.onnx'));
        return assertMmeError(resolve(root), 'MME_ERR_INVALID_MODEL', /model\.onnx in .* is a symbolic link/);
      });

      it('does not descend into a symlinked subdirectory', () => {
        const elsewhere = writeModelDir(tmp(), 'elsewhere', MODEL);
        const root = layout('m', {});
        symlinkSync(elsewhere, path.join(root, 'sub'));
        return assertMmeError(resolve(root), 'MME_ERR_INVALID_MODEL', /must hold a \.onnx file/);
      });

      it('refuses a handler.js that is a symbolic link', () => {
        const root = layout('m', { 'model.onnx': MODEL, 'real.js': '//' });
        symlinkSync(path.join(root, 'real.js'), path.join(root, 'handler.js'));
        return assertMmeError(resolve(root), 'MME_ERR_INVALID_MODEL', /handler\.js in .* is a symbolic link/);
      });

      it('refuses a configured handler reached through a symlinked directory', () => {
        const outside = layout('outside', { 'h.js': '//' });
        const root = layout('m', { 'model.onnx': MODEL, 'model-config.json': '{"handler": "lib/h.js"}' });
        symlinkSync(outside, path.join(root, 'lib'));
        return assertMmeError(resolve(root), 'MME_ERR_INVALID_MODEL', /lib in .* is a symbolic link/);
      });

      it('refuses a model-config.json that is a symbolic link', () => {
        const root = layout('m', { 'model.onnx': MODEL, 'real.json': '{}' });
        symlinkSync(path.join(root, 'real.json'), path.join(root, 'model-config.json'));
        return assertMmeError(resolve(root), 'MME_ERR_INVALID_MODEL', /model-config\.json in .* is a symbolic link/);
      });
    });

    describe('handler', () => {
      it('uses handler.js beside the model', async () => {
        const root = layout('m', { 'model.onnx': MODEL, 'handler.js': '//' });
        assert.equal((await resolve(root)).handlerPath, path.join(root, 'handler.js'));
      });

      it('uses the file named by model-config.json "handler"', async () => {
        const root = layout('m', {
          'model.onnx': MODEL,
          'handler.js': '//',
          'lib/custom.js': '//',
          'model-config.json': '{"handler": "lib/custom.js"}',
        });
        const a = await resolve(root);
        assert.equal(a.handlerPath, path.join(root, 'lib', 'custom.js'));
        assert.equal(a.modelConfig.handler, 'lib/custom.js');
      });

      it('refuses a configured handler that does not exist', () => {
        const root = layout('m', { 'model.onnx': MODEL, 'model-config.json': '{"handler": "nope.js"}' });
        return assertMmeError(
          resolve(root),
          'MME_ERR_INVALID_MODEL',
          /handler "nope\.js" named in model-config\.json in .* does not exist/,
        );
      });

      it('refuses a handler.js that is a directory', () => {
        const root = layout('m', { 'model.onnx': MODEL, 'handler.js': null });
        return assertMmeError(
          resolve(root),
          'MME_ERR_INVALID_MODEL',
          /handler handler\.js in .* is not a regular file/,
        );
      });

      for (const handler of ['../outside.js', '/etc/passwd', 'a/../../b.js']) {
        it(`refuses the handler path ${handler}`, () => {
          const root = layout('m', { 'model.onnx': MODEL, 'model-config.json': JSON.stringify({ handler }) });
          return assertMmeError(
            resolve(root),
            'MME_ERR_INVALID_MODEL',
            /"handler" must be a relative path inside the model directory/,
          );
        });
      }
    });

    it('leaves a plain directory untouched on dispose() and creates nothing in cacheDir', async () => {
      const dir = writeModelDir(tmp(), 'm', mlpModel({ sizes: [4, 8, 3] }));
      const a = await resolve(dir);
      await a.dispose();
      assert.deepEqual(readdirSync(dir), ['model.onnx']);
      assert.equal(existsSync(cacheDir()), false);
    });
  });
