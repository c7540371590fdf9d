/**
 * deploy/k8s's settings, as docs/deploy.md "Kubernetes: your settings" walks through them: as
 * shipped nothing runs (the repository url stops the server at start-up), and the page's commands,
 * run on a copy of deploy/, put the user's bucket, role and registry where `kubectl kustomize` renders them.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { runCliToExit } from '../../harness/cli-server';
import { bash, codeBlocks, kRepoRoot } from '../helpers/docs-examples';
import { tempDir, testProperties } from '../../harness/test-server';
import { skipBecause } from '../helpers/skip';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;

const kKubectl = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((p) => fs.existsSync(p));

function render(root: string, dir: string): Doc[] {
  return parseAllDocuments(
    execFileSync(kKubectl!, ['kustomize', path.join(root, 'deploy', dir)], { encoding: 'utf8' }),
  ).map((d) => d.toJS());
}

function settings(root: string): Record<string, string> {
  const text = fs.readFileSync(path.join(root, 'deploy/k8s/settings.env'), 'utf8');
  return Object.fromEntries(
    text
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

function rendered(objects: Doc[]): { repository: string; role: string; image: string } {
  const pod = objects.find((o) => o.kind === 'StatefulSet').spec.template.spec;
  const env = Object.fromEntries(pod.containers[0].env.map((e: Doc) => [e.name, e.value]));
  const account = objects.find((o) => o.kind === 'ServiceAccount');
  return {
    repository: env.MMS_MODEL_REPOSITORY,
    role: account.metadata.annotations['eks.amazonaws.com/role-arn'],
    image: pod.containers[0].image,
  };
}

describe('deploy/k8s settings (docs/deploy.md "Kubernetes: your settings")', function () {
  before(function () {
    if (!kKubectl) skipBecause(this, 'kubectl', 'kubectl is not installed; install it to render the manifests');
  });

  it('renders settings.env into the StatefulSet and the ServiceAccount, and sends no settings ConfigMap', () => {
    const objects = render(kRepoRoot, 'k8s');
    const shipped = settings(kRepoRoot);
    assert.deepEqual(rendered(objects), {
      repository: shipped.MODEL_REPOSITORY,
      role: shipped.IAM_ROLE_ARN,
      image: 'sagemaker-mme-node:0.1.0',
    });
    assert.equal(objects.filter((o) => o.kind === 'ConfigMap').length, 0, 'local-config: kustomize keeps it');
  });

  it('as shipped, the repository url stops the server with one line naming model_repository (the pod is never Ready)', async () => {
    const { repository } = rendered(render(kRepoRoot, 'k8s'));
    const run = await runCliToExit(testProperties(tempDir('mme-store-'), 'enable_envvars_config=true'), {
      MMS_MODEL_REPOSITORY: repository,
    });
    assert.equal(run.code, 1, run.stdout);
    assert.match(
      run.stderr.trim(),
      /^config key model_repository: "s3:\/\/SET-YOUR-BUCKET\/mme-models" is not an S3 bucket url .*; set by environment variable MMS_MODEL_REPOSITORY$/,
    );
  });

  it("the page's commands, run from a copy of the repository root, set bucket, role and registry in every rendering", async () => {
    const root = tempDir('mme-deploy-');
    fs.cpSync(path.join(kRepoRoot, 'deploy'), path.join(root, 'deploy'), { recursive: true });
    const block = codeBlocks('docs/deploy.md', 'sh').find((b) => b.includes('deploy/k8s/settings.env'));
    assert.ok(block, 'docs/deploy.md has the settings commands');
    const run = await bash(block, root);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /s3:\/\/my-models-bucket\/mme-models/);
    for (const dir of ['k8s', 'k8s-overlays/nginx-router', 'k8s-overlays/gateway-api']) {
      assert.deepEqual(
        rendered(render(root, dir)),
        {
          repository: 's3://my-models-bucket/mme-models',
          role: 'arn:aws:iam::123456789012:role/mme-model-repository-read',
          image: '123456789012.dkr.ecr.us-east-1.amazonaws.com/sagemaker-mme-node:0.1.0',
        },
        dir,
      );
    }
  });
});
