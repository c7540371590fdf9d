/**
 * deploy/k8s's settings, as docs/deploy.md "Kubernetes: your settings" walks through them: as
 * shipped nothing runs (each SET-YOUR- placeholder stops the server at start-up or leaves the pods
 * waiting), the namespace-dependent names follow settings.env, and the page's commands,
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

/** Where in `o` a value holds a SET-YOUR- placeholder, as dotted paths (list entries with a name by it). */
function placeholders(o: Doc, at: string): string[] {
  if (typeof o === 'string') return o.includes('SET-YOUR-') ? [at] : [];
  if (o === null || typeof o !== 'object') return [];
  if (Array.isArray(o))
    return o.flatMap((v, i) =>
      typeof v?.name === 'string' && 'value' in v
        ? placeholders(v.value, `${at}.${v.name}`)
        : placeholders(v, `${at}.${i}`),
    );
  return Object.entries(o).flatMap(([k, v]) => placeholders(v, `${at}.${k}`));
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

  it('as shipped, every SET-YOUR- placeholder of every rendering stops something at once, naming it', async () => {
    const dirs = [
      'k8s',
      ...fs.readdirSync(path.join(kRepoRoot, 'deploy/k8s-overlays')).map((d) => `k8s-overlays/${d}`),
    ];
    const placed = new Set<string>();
    for (const dir of dirs) {
      for (const o of render(kRepoRoot, dir)) for (const at of placeholders(o, `${o.kind}`)) placed.add(at);
    }
    // The pod's environment and the role annotation, which EKS's IRSA webhook copies into the pod's
    // AWS_ROLE_ARN, stop the server; the issuer leaves the Certificate, and so the pods' Secret, unmade.
    assert.deepEqual([...placed].sort(), [
      'Certificate.spec.issuerRef.name',
      'ServiceAccount.metadata.annotations.eks.amazonaws.com/role-arn',
      'StatefulSet.spec.template.spec.containers.0.env.MMS_MODEL_REPOSITORY',
    ]);
    const objects = render(kRepoRoot, 'k8s');
    const pod = objects.find((o) => o.kind === 'StatefulSet').spec.template.spec;
    const podEnv = Object.fromEntries(
      pod.containers[0].env.filter((e: Doc) => e.value !== undefined).map((e: Doc) => [e.name, e.value]),
    );
    for (const [env, name] of [
      [{ MMS_MODEL_REPOSITORY: podEnv.MMS_MODEL_REPOSITORY }, 'MMS_MODEL_REPOSITORY'],
      [{ AWS_ROLE_ARN: rendered(objects).role }, 'AWS_ROLE_ARN'],
    ] as const) {
      const run = await runCliToExit(testProperties(tempDir('mme-store-'), 'enable_envvars_config=true'), env);
      assert.equal(run.code, 1, run.stdout);
      assert.match(
        run.stderr.trim(),
        new RegExp(
          `^environment variable ${name}="[^"]*SET-YOUR-[^"]*" still holds a placeholder .*deploy/k8s/settings.env`,
        ),
      );
    }
    const tls = render(kRepoRoot, 'k8s-overlays/tls');
    const secret = tls.find((o) => o.kind === 'Certificate').spec.secretName;
    const volume = tls
      .find((o) => o.kind === 'StatefulSet')
      .spec.template.spec.volumes.find((v: Doc) => v.secret?.secretName === secret);
    assert.ok(volume && volume.secret.optional !== true, 'the pods wait for the Secret the Certificate writes');
  });

  it("NAMESPACE, CLUSTER_DOMAIN and DNS_RESOLVER of settings.env name the certificate and the routers' replicas", () => {
    const root = tempDir('mme-deploy-');
    fs.cpSync(path.join(kRepoRoot, 'deploy'), path.join(root, 'deploy'), { recursive: true });
    const file = path.join(root, 'deploy/k8s/settings.env');
    fs.writeFileSync(
      file,
      fs
        .readFileSync(file, 'utf8')
        .replace(/^NAMESPACE=.*$/m, 'NAMESPACE=ml')
        .replace(/^CLUSTER_DOMAIN=.*$/m, 'CLUSTER_DOMAIN=corp.internal')
        .replace(/^DNS_RESOLVER=.*$/m, 'DNS_RESOLVER=coredns.dns.svc.corp.internal'),
    );
    const certificate = render(root, 'k8s-overlays/tls').find((o) => o.kind === 'Certificate');
    assert.deepEqual(certificate.spec.dnsNames, [
      'sagemaker-mme-node',
      'sagemaker-mme-node.ml.svc',
      'sagemaker-mme-node.ml.svc.corp.internal',
      '*.sagemaker-mme-node-pods.ml.svc.corp.internal',
    ]);
    for (const [dir, want] of [
      ['nginx-router', { CLUSTER_DOMAIN: 'corp.internal', DNS_RESOLVER: 'coredns.dns.svc.corp.internal' }],
      ['haproxy-router', { CLUSTER_DOMAIN: 'corp.internal' }],
    ] as const) {
      const router = render(root, `k8s-overlays/${dir}`).find((o) => o.kind === 'Deployment');
      const env = router.spec.template.spec.containers[0].env.filter((e: Doc) => e.name in want);
      assert.deepEqual(Object.fromEntries(env.map((e: Doc) => [e.name, e.value])), want, dir);
    }
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
