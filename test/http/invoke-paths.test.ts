/**
 * invokePath and invocationsTarget (src/http/invoke-paths.ts): which paths the invoke routes take
 * (any case, a trailing slash, absolute form), the model name one percent-decoded segment; and on
 * /invocations the model a header or ?model_name= names, else the only one loaded.
 */
import assert from 'node:assert/strict';
import { invocationsTarget, invokePath } from '../../src/http/invoke-paths';
import { throwsMme } from '../helpers/throws-mme';

const manager = (registered: string[], servingCount = registered.length) => ({
  registered: (name: string) => registered.includes(name),
  onlyModel: () => (registered.length === 1 ? registered[0] : null),
  servingCount: () => servingCount,
});

describe('http/invoke-paths: the invoke routes and their model', () => {
  it('takes each route in any case, with a trailing slash, and names its pattern, never the path', () => {
    assert.deepEqual(invokePath('/MODELS/a%20b/Invoke/?x=1#f'), {
      route: '/models/:name/invoke',
      oip: false,
      name: 'a b',
      path: '/MODELS/a%20b/Invoke/',
      query: 'x=1',
    });
    assert.equal(invokePath('/invocations')?.name, null);
    assert.equal(invokePath('/predictions/m')?.route, '/predictions/:name');
    assert.deepEqual(
      [invokePath('/v2/models/m/infer')?.oip, invokePath('/v2/models/m/versions/%31/infer')?.version],
      [true, '1'],
    );
  });

  it('reads the absolute form, keeps a bad percent-encoding as sent, and a # ends the query', () => {
    assert.equal(invokePath('http://host:8080/models/m/invoke?q')?.query, 'q');
    assert.equal(invokePath('/models/%E0%A4%A/invoke')?.name, '%E0%A4%A');
    assert.equal(invokePath('/models/m/invoke#?not-a-query')?.query, '');
  });

  it('takes nothing else: other paths, a name of two segments, a target that is not a path', () => {
    for (const url of [
      '/models/m',
      '/models/a/b/invoke',
      '/invocationsx',
      '*',
      'models/m/invoke',
      'http://h',
      '/v2/models/m',
    ])
      assert.equal(invokePath(url), null, url);
  });

  it('on /invocations: the multiplexing header, then the SageMaker header, then one ?model_name=', () => {
    const m = manager(['a', 'b', 'c']);
    assert.equal(
      invocationsTarget({ serve_multiplexed_model_id: 'a', 'x-amzn-sagemaker-target-model': 'b' }, '', m),
      'a',
    );
    assert.equal(invocationsTarget({ 'x-amzn-sagemaker-target-model': 'b' }, 'model_name=c', m), 'b');
    assert.equal(invocationsTarget({}, 'model_name=c', m), 'c');
  });

  it("a TargetModel not registered as such is its artifact's base name without .tar.gz", () => {
    const m = manager(['p/x.tar.gz']);
    assert.equal(invocationsTarget({ 'x-amzn-sagemaker-target-model': 'p/x.tar.gz' }, '', m), 'p/x.tar.gz');
    assert.equal(invocationsTarget({ 'x-amzn-sagemaker-target-model': 'dir/sub/y.tgz' }, '', m), 'y');
  });

  it('without a name: the only model loaded, else a 400 that says how to name one', () => {
    assert.equal(invocationsTarget({}, 'model_name=a&model_name=b', manager(['solo'])), 'solo');
    throwsMme(
      () => invocationsTarget({}, '', manager([], 0)),
      'MME_ERR_BAD_REQUEST',
      /^No model is loaded\. Load one with POST \/models/,
    );
    throwsMme(
      () => invocationsTarget({}, 'model_name=a&model_name=b', manager(['a', 'b'])),
      'MME_ERR_BAD_REQUEST',
      /^2 models are loaded; name the target with the X-Amzn-SageMaker-Target-Model header/,
    );
  });
});
