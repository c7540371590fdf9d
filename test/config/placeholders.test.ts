/**
 * refusePlaceholders (src/config/placeholders.ts): a deployment file's SET-YOUR-… left in any
 * environment variable stops the start, naming every such variable (its value cut to 100
 * characters) and where to set it; an environment without one passes.
 */
import assert from 'node:assert/strict';
import { refusePlaceholders } from '../../src/config/placeholders';
import { isMmeError } from '../../src/errors';

describe('config/placeholders: a placeholder left in the environment', () => {
  it('passes an environment without SET-YOUR-, whatever else it holds', () => {
    refusePlaceholders({});
    refusePlaceholders({
      AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/mme',
      EMPTY: '',
      UNSET: undefined,
      LOW: 'set-your-own',
    });
  });

  it('stops the start naming each variable that holds one, sorted, with where to set it', () => {
    assert.throws(
      () =>
        refusePlaceholders({
          Z_LAST: 'SET-YOUR-BUCKET',
          AWS_ROLE_ARN: 'arn:aws:iam::SET-YOUR-ACCOUNT:role/x',
          FINE: 'yes',
        }),
      (err: unknown) => {
        assert.ok(isMmeError(err));
        assert.equal(err.code, 'MME_ERR_CONFIG');
        assert.equal(
          err.message,
          'environment variable AWS_ROLE_ARN="arn:aws:iam::SET-YOUR-ACCOUNT:role/x", Z_LAST="SET-YOUR-BUCKET" still holds a placeholder of the deployment files: set your value where it comes from (in Kubernetes, the SET-YOUR-… line of deploy/k8s/settings.env; docs/deploy.md "Kubernetes: your settings")',
        );
        return true;
      },
    );
  });

  it('quotes at most 100 characters of a value', () => {
    assert.throws(
      () => refusePlaceholders({ LONG: `SET-YOUR-${'x'.repeat(1000)}` }),
      (err: unknown) =>
        isMmeError(err) &&
        err.message.includes(`LONG="SET-YOUR-${'x'.repeat(91)}"`) &&
        !err.message.includes('x'.repeat(92)),
    );
  });
});
