import assert from 'node:assert/strict';
import { isMmeError } from '../../src/errors';
import { parseArgs, USAGE, type CliArgs } from '../../src/config/cli';

const kNone: CliArgs = { command: null, mmsConfig: null, modelStore: null, models: null, help: false };

function assertCliError(argv: string[], pattern: RegExp): void {
  assert.throws(
    () => parseArgs(argv),
    (err: unknown) => {
      assert.ok(isMmeError(err));
      assert.equal(err.code, 'MME_ERR_CONFIG');
      assert.match(err.message, pattern);
      return true;
    },
  );
}

describe('parseArgs', () => {
  it('returns nothing set for no arguments', () => {
    assert.deepEqual(parseArgs([]), kNone);
  });

  it('accepts the "serve" SageMaker passes', () => {
    assert.deepEqual(parseArgs(['serve']), { ...kNone, command: 'serve' });
  });

  it('accepts --mms-config FILE, --mms-config=FILE and -f FILE', () => {
    assert.equal(parseArgs(['--mms-config', '/a.properties']).mmsConfig, '/a.properties');
    assert.equal(parseArgs(['--mms-config=/b.properties']).mmsConfig, '/b.properties');
    assert.equal(parseArgs(['-f', 'c.properties', 'serve']).mmsConfig, 'c.properties');
  });

  it('accepts --model-store DIR and --model-store=DIR', () => {
    assert.equal(parseArgs(['--model-store', '/opt/ml/models']).modelStore, '/opt/ml/models');
    assert.equal(parseArgs(['--model-store=/m']).modelStore, '/m');
  });

  it('splits --models values at commas and takes every word up to the next flag', () => {
    assert.deepEqual(parseArgs(['--models', 'a=/a,b']).models, ['a=/a', 'b']);
    assert.deepEqual(parseArgs(['--models', 'a=/a', 'c=/c,d', '--model-store', '/m']), {
      ...kNone,
      models: ['a=/a', 'c=/c', 'd'],
      modelStore: '/m',
    });
    assert.deepEqual(parseArgs(['--models=a=/a', 'b=/b']).models, ['a=/a', 'b=/b']);
    assert.deepEqual(parseArgs(['--models', 'ALL']).models, ['ALL']);
  });

  it('never takes "serve" as a --models value (SageMaker appends it after the ENTRYPOINT)', () => {
    assert.deepEqual(parseArgs(['--models', 'a=/a', 'serve']), { ...kNone, command: 'serve', models: ['a=/a'] });
  });

  it('lets the last occurrence of a flag win', () => {
    assert.equal(parseArgs(['--model-store', '/1', '--model-store', '/2']).modelStore, '/2');
  });

  it('accepts --help and -h', () => {
    assert.equal(parseArgs(['--help']).help, true);
    assert.equal(parseArgs(['serve', '-h']).help, true);
  });

  it('accepts --version', () => {
    assert.deepEqual(parseArgs(['--version']), { ...kNone, version: true });
  });

  it('rejects unknown flags, listing the accepted ones', () => {
    assertCliError(
      ['--start'],
      /unknown option "--start" \(accepted: serve, --mms-config FILE \(-f FILE\), --model-store DIR, --models \[NAME=\]URL\.\.\., --help \(-h\), --version\)/,
    );
    assertCliError(['--help=1'], /unknown option "--help=1"/);
  });

  it('rejects unexpected words', () => {
    assertCliError(['train'], /unexpected argument "train" \(accepted: serve,/);
  });

  it('rejects flags without their value', () => {
    assertCliError(['--mms-config'], /--mms-config needs a value/);
    assertCliError(['--mms-config='], /--mms-config needs a value/);
    assertCliError(['-f', '--models', 'a'], /-f needs a value/);
    assertCliError(['--model-store', 'serve'], /--model-store needs a value/);
    assertCliError(['--models'], /--models needs at least one/);
    assertCliError(['--models', ',', '--help'], /--models needs at least one/);
  });

  it('has a usage text naming every flag', () => {
    for (const flag of ['serve', '--mms-config', '-f', '--model-store', '--models', '--help', 'MMS_CONFIG_FILE']) {
      assert.ok(USAGE.includes(flag), flag);
    }
  });
});
