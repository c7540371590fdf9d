/**
 * parseLoadModels (src/config/load-models.ts): load_models is ALL or a comma list of [name=]url; a
 * name comes from the url when not given, and a url's own `=` (a query) is not a name.
 */
import assert from 'node:assert/strict';
import { parseLoadModels } from '../../src/config/load-models';

describe('config/load-models: the load_models list', () => {
  it('reads ALL in any case and around spaces', () => {
    for (const v of ['ALL', 'all', ' All ']) assert.equal(parseLoadModels(v), 'ALL');
  });

  it('names each model by name=url, or by the url without trailing slashes, query or archive suffix', () => {
    assert.deepEqual(
      parseLoadModels(' a = /m/x , /store/resnet/ , s3dir/b.tar.gz, c.TGZ, https://h/p/d.tar.gz?v=1#f, plain/e?x, , '),
      [
        { name: 'a', url: '/m/x' },
        { name: 'resnet', url: '/store/resnet/' },
        { name: 'b', url: 's3dir/b.tar.gz' },
        { name: 'c', url: 'c.TGZ' },
        { name: 'd', url: 'https://h/p/d.tar.gz?v=1#f' },
        // A plain path has no query: '?' is part of the name.
        { name: 'e?x', url: 'plain/e?x' },
      ],
    );
    assert.deepEqual(parseLoadModels(''), []);
  });

  it("splits at '=' only when its left side cannot be part of a url", () => {
    assert.deepEqual(parseLoadModels('/m/f.tar.gz?a=b'), [{ name: 'f.tar.gz?a=b', url: '/m/f.tar.gz?a=b' }]);
    assert.deepEqual(parseLoadModels('http://h/g.tgz?a=b'), [{ name: 'g', url: 'http://h/g.tgz?a=b' }]);
  });

  it('names what is wrong: an empty name or url, no name to derive, a name twice', () => {
    assert.deepEqual(parseLoadModels('=/m/x'), { problem: '"=/m/x" has an empty model name' });
    assert.deepEqual(parseLoadModels('a='), { problem: '"a=" has an empty url' });
    assert.deepEqual(parseLoadModels('/'), { problem: 'cannot derive a model name from "/"; write name=/' });
    assert.deepEqual(parseLoadModels('x=/a, /b/x/'), { problem: 'model name "x" appears twice' });
  });
});
