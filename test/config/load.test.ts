import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isMmeError } from '../../src/errors';
import { loadConfig } from '../../src/config/load';

describe('loadConfig (file lookup)', () => {
  let dir: string;
  let cwd: string;
  const write = (name: string, text: string): string => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  };
  const assertConfigError = (fn: () => unknown, ...parts: string[]): void => {
    assert.throws(fn, (err: unknown) => {
      assert.ok(isMmeError(err));
      assert.equal(err.code, 'MME_ERR_CONFIG');
      for (const part of parts)
        assert.ok(err.message.includes(part), `${JSON.stringify(err.message)} lacks ${JSON.stringify(part)}`);
      return true;
    });
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mme-config-'));
    cwd = path.join(dir, 'cwd');
    fs.mkdirSync(cwd);
  });

  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('uses built-in defaults when no file is named and ./config.properties is absent', () => {
    const config = loadConfig({}, [], cwd);
    assert.equal(config.configFile, null);
    assert.equal(config.jobQueueSize, 100);
  });

  it('reads ./config.properties from the working directory', () => {
    const file = write('cwd/config.properties', 'job_queue_size=1');
    const config = loadConfig({}, ['serve'], cwd);
    assert.equal(config.configFile, file);
    assert.equal(config.jobQueueSize, 1);
  });

  it('prefers --mms-config over ./config.properties, resolving it against the working directory', () => {
    write('cwd/config.properties', 'job_queue_size=1');
    const file = write('flag.properties', 'job_queue_size=2');
    const config = loadConfig({}, ['--mms-config', '../flag.properties'], cwd);
    assert.equal(config.configFile, file);
    assert.equal(config.jobQueueSize, 2);
  });

  it('prefers MMS_CONFIG_FILE over --mms-config', () => {
    write('cwd/config.properties', 'job_queue_size=1');
    const flag = write('flag.properties', 'job_queue_size=2');
    const fromEnv = write('env.properties', 'job_queue_size=3');
    const config = loadConfig({ MMS_CONFIG_FILE: fromEnv }, ['-f', flag], cwd);
    assert.equal(config.configFile, fromEnv);
    assert.equal(config.jobQueueSize, 3);
  });

  it('ignores an empty MMS_CONFIG_FILE', () => {
    const flag = write('flag.properties', 'job_queue_size=2');
    assert.equal(loadConfig({ MMS_CONFIG_FILE: '' }, [`--mms-config=${flag}`], cwd).jobQueueSize, 2);
  });

  it('fails on a missing file named by MMS_CONFIG_FILE, naming path and source', () => {
    write('cwd/config.properties', 'job_queue_size=1');
    const missing = path.join(dir, 'nope.properties');
    assertConfigError(
      () => loadConfig({ MMS_CONFIG_FILE: missing }, [], cwd),
      `config file ${missing} (named by environment variable MMS_CONFIG_FILE) does not exist`,
    );
  });

  it('fails on a missing file named by --mms-config instead of falling back', () => {
    write('cwd/config.properties', 'job_queue_size=1');
    assertConfigError(
      () => loadConfig({}, ['--mms-config', 'typo.properties'], cwd),
      `config file ${path.join(cwd, 'typo.properties')} (named by --mms-config) does not exist`,
    );
  });

  it('fails when ./config.properties exists but cannot be read', () => {
    fs.mkdirSync(path.join(cwd, 'config.properties'));
    assertConfigError(
      () => loadConfig({}, [], cwd),
      `config file ${path.join(cwd, 'config.properties')} cannot be read (EISDIR)`,
    );
  });

  it('passes environment and command line through to resolution', () => {
    write(
      'cwd/config.properties',
      'inference_address=http://0.0.0.0:$$PORT_FOR_TEST$$\nmanagement_address=http://0.0.0.0:8081',
    );
    const config = loadConfig(
      { PORT_FOR_TEST: '8080', SAGEMAKER_BIND_TO_PORT: '9000' },
      ['serve', '--model-store', cwd],
      cwd,
    );
    assert.equal(config.inferenceAddress.port, 9000);
    assert.equal(config.sharedListener, true);
    assert.equal(config.modelStore, cwd);
  });

  it('reports errors in the file with its path', () => {
    const file = write('cwd/config.properties', 'job_queue_size=abc');
    assertConfigError(() => loadConfig({}, [], cwd), `; set in ${file}`);
  });

  it('rejects bad command lines', () => {
    assertConfigError(() => loadConfig({}, ['--bogus'], cwd), 'unknown option "--bogus"');
  });
});
