import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { keySpec } from '../../src/config/keys';
import { MODEL_KEY_CONF } from '../../scripts/fleet/nginx';

const kDeploy = path.join(__dirname, '..', '..', '..', 'deploy');
/** What the server may still do after the drain: flush metrics (bounded at 2 s, README "Metrics"). */
const kFlushSeconds = 2;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;

function yamlFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return yamlFiles(p);
    return /\.ya?ml$/.test(e.name) ? [p] : [];
  });
}

function parse(file: string): Doc[] {
  const docs = parseAllDocuments(fs.readFileSync(file, 'utf8'));
  const list = Array.isArray(docs) ? docs : [docs];
  for (const d of list) assert.deepEqual(d.errors.map((e) => e.message), [], `${path.relative(kDeploy, file)} parses`);
  return list.map((d) => d.toJS());
}

const k8s = () => yamlFiles(path.join(kDeploy, 'k8s')).flatMap(parse);
const ofKind = (kind: string) => {
  const found = k8s().filter((d) => d.kind === kind);
  assert.ok(found.length > 0, `a ${kind} in deploy/k8s`);
  return found;
};

/** The drain the server does on SIGTERM: MMS_SHUTDOWN_TIMEOUT when set, else the key's default. */
function drainSeconds(env: Record<string, string> | undefined): number {
  return Number(env?.MMS_SHUTDOWN_TIMEOUT ?? keySpec('shutdown_timeout')!.default);
}

function mibOf(quantity: string): number {
  const m = /^(\d+(?:\.\d+)?)(Mi|Gi|m|g)?$/.exec(String(quantity));
  assert.ok(m, `memory quantity ${quantity}`);
  return Number(m[1]) * ({ Mi: 1, Gi: 1024, m: 1, g: 1024 }[m[2] ?? 'Mi'] ?? 1);
}

describe('deploy/: Kubernetes, nginx and compose files', () => {
  it('every YAML file parses', () => {
    const files = yamlFiles(kDeploy);
    assert.ok(files.length >= 7, files.join(', '));
    for (const f of files) parse(f);
  });

  it('Deployment: readiness on /ping, preStop, a grace period covering preStop + drain, memory limits the budget reads', () => {
    const [deployment] = ofKind('Deployment');
    const pod = deployment.spec.template.spec;
    const [c] = pod.containers;
    assert.equal(c.readinessProbe.httpGet.path, '/ping');
    assert.equal(c.livenessProbe.httpGet.path, '/ping');
    const env = Object.fromEntries(c.env.map((e: Doc) => [e.name, e.value]));
    for (const name of Object.keys(env)) {
      assert.ok(keySpec(name.replace(/^MMS_/, '').toLowerCase()), `${name} is MMS_<a config key>`);
    }
    const [cmd, seconds] = c.lifecycle.preStop.exec.command;
    assert.equal(cmd, 'sleep');
    assert.ok(pod.terminationGracePeriodSeconds >= Number(seconds) + drainSeconds(env) + kFlushSeconds,
      `grace ${pod.terminationGracePeriodSeconds} s ≥ preStop ${seconds} s + shutdown_timeout ${drainSeconds(env)} s + flush`);
    assert.ok(c.resources.limits.memory, 'a memory limit: the budget comes from the cgroup');
    assert.equal(c.resources.requests.memory, c.resources.limits.memory, 'requests = limits: the pod gets the memory its budget assumes');
    assert.ok(mibOf(c.resources.limits.memory) > Number(keySpec('model_memory_reserve_mb')!.default), 'room for models beyond the reserve');
    assert.notEqual(env.MMS_MANAGEMENT_ADDRESS?.includes('0.0.0.0'), true, 'management is not exposed');
  });

  it('Deployment: models come from model_repository into a size-limited emptyDir, with no PersistentVolumeClaim', () => {
    assert.deepEqual(k8s().filter((d) => d.kind === 'PersistentVolumeClaim'), [], 'no PVC: the common storage classes cannot give ReadOnlyMany');
    const [deployment] = ofKind('Deployment');
    const pod = deployment.spec.template.spec;
    const [c] = pod.containers;
    const env = Object.fromEntries(c.env.map((e: Doc) => [e.name, e.value]));
    assert.match(env.MMS_MODEL_REPOSITORY, /^s3:\/\/[a-z0-9.-]+\//);
    const mount = c.volumeMounts.find((m: Doc) => m.mountPath === env.MMS_MODEL_CACHE_DIR);
    assert.ok(mount, 'the disk cache is a mounted volume');
    const volume = pod.volumes.find((v: Doc) => v.name === mount.name);
    assert.ok(volume.emptyDir, 'an emptyDir');
    assert.ok(Number(env.MMS_MODEL_CACHE_DISK_MB) < mibOf(volume.emptyDir.sizeLimit), 'model_cache_disk_mb below the sizeLimit: the kubelet evicts pods past it');
    assert.ok(pod.volumes.every((v: Doc) => !v.persistentVolumeClaim));
    const [account] = ofKind('ServiceAccount');
    assert.equal(pod.serviceAccountName, account.metadata.name);
    assert.match(account.metadata.annotations['eks.amazonaws.com/role-arn'], /^arn:aws:iam::\d{12}:role\//, 'IRSA: the role the SDK default chain assumes');
  });

  it('Service, HPA and Ingress point at the Deployment; the Ingress hashes on the model name', () => {
    const [deployment] = ofKind('Deployment');
    const labels = deployment.spec.template.metadata.labels;
    const [service] = ofKind('Service');
    for (const [k, v] of Object.entries(service.spec.selector)) assert.equal(labels[k], v, `selector ${k}`);
    const [hpa] = ofKind('HorizontalPodAutoscaler');
    assert.deepEqual([hpa.spec.scaleTargetRef.kind, hpa.spec.scaleTargetRef.name], ['Deployment', deployment.metadata.name]);
    assert.ok(hpa.spec.metrics.every((m: Doc) => m.resource?.name !== 'memory'), 'a self-managed cache fills its memory: never scale on it');
    const [ingress] = ofKind('Ingress');
    assert.equal(ingress.metadata.annotations['nginx.ingress.kubernetes.io/upstream-hash-by'], '$mme_model');
    const paths = ingress.spec.rules.flatMap((r: Doc) => r.http.paths);
    assert.deepEqual(paths.map((p: Doc) => p.path).sort(), ['/invocations', '/models/[^/]+/invoke', '/predictions/[^/]+']);
    for (const p of paths) assert.equal(p.backend.service.name, service.metadata.name);
  });

  it('the controller ConfigMap defines $mme_model with exactly deploy/nginx/model-key.conf and keeps underscore headers', () => {
    const [cm] = ofKind('ConfigMap');
    assert.equal(cm.data['http-snippet'], fs.readFileSync(MODEL_KEY_CONF, 'utf8'));
    assert.equal(cm.data['enable-underscores-in-headers'], 'true');
  });

  it('kustomization lists files that exist', () => {
    const [kustomization] = ofKind('Kustomization');
    for (const r of kustomization.resources) assert.ok(fs.existsSync(path.join(kDeploy, 'k8s', r)), r);
  });

  it('compose: three replicas with memory limits and a stop grace covering the drain, behind nginx hashing on the model', () => {
    const [compose] = parse(path.join(kDeploy, 'nginx', 'compose.yaml'));
    const replicas = Object.keys(compose.services).filter((s) => s.startsWith('mme-'));
    assert.deepEqual(replicas, ['mme-1', 'mme-2', 'mme-3']);
    for (const name of replicas) {
      const s = compose.services[name];
      assert.ok(s.mem_limit, `${name} mem_limit`);
      assert.ok(parseInt(s.stop_grace_period, 10) >= drainSeconds(s.environment) + kFlushSeconds, `${name} stop_grace_period`);
    }
    const conf = fs.readFileSync(path.join(kDeploy, 'nginx', 'nginx.conf'), 'utf8');
    assert.match(conf, /include \/etc\/nginx\/mme\/model-key\.conf;/);
    assert.match(conf, /hash \$mme_model consistent;/);
    assert.match(conf, /underscores_in_headers on;/);
    assert.deepEqual([...conf.matchAll(/server (mme-\d):8080/g)].map((m) => m[1]), replicas);
    const mounts: string[] = compose.services.nginx.volumes;
    assert.ok(mounts.includes('./model-key.conf:/etc/nginx/mme/model-key.conf:ro'));
  });
});
