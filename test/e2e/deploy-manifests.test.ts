import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { keySpec } from '../../src/config/keys';
import { MODEL_KEY_CONF } from '../../harness/routers/nginx';
import { skipBecause } from '../helpers/skip';

const kDeploy = path.join(__dirname, '..', '..', '..', 'deploy');
const kDocker = path.join(__dirname, '..', '..', '..', 'docker');
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
  for (const d of list)
    assert.deepEqual(
      d.errors.map((e) => e.message),
      [],
      `${path.relative(kDeploy, file)} parses`,
    );
  return list.map((d) => d.toJS());
}

const kOverlays = path.join(kDeploy, 'k8s-overlays');
const kNginx = path.join(kDeploy, 'nginx');
const kHaproxy = path.join(kDeploy, 'haproxy');

/** The objects of the YAML files in deploy/k8s (the base) or in one overlay's directory. */
const k8s = (dir = 'k8s') => yamlFiles(path.join(kDeploy, dir)).flatMap(parse);
const ofKind = (kind: string, dir = 'k8s') => {
  const found = k8s(dir).filter((d) => d.kind === kind);
  assert.ok(found.length > 0, `a ${kind} in deploy/${dir}`);
  return found;
};

/** `kubectl kustomize` of deploy/<dir>: the objects `kubectl apply -k` would send. */
function render(kubectl: string, dir: string): Doc[] {
  return parseAllDocuments(execFileSync(kubectl, ['kustomize', path.join(kDeploy, dir)], { encoding: 'utf8' })).map(
    (d) => d.toJS(),
  );
}

/** The model-server replicas: a StatefulSet, whose pod names the nginx router's ring is built on. */
const replicas = (objects: Doc[] = k8s()) =>
  objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'sagemaker-mme-node');

/** The `server host:port` lines of an nginx replica list. */
const serverLines = (file: string) =>
  [...fs.readFileSync(file, 'utf8').matchAll(/^server (\S+?):(\d+)\b/gm)].map((m) => ({
    host: m[1],
    port: Number(m[2]),
  }));

/** An HAProxy configuration's `server` addresses, by backend. */
function haproxyServers(conf: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let backend = '';
  for (const line of conf.split('\n')) {
    if (/^\S/.test(line)) backend = /^backend (\S+)/.exec(line)?.[1] ?? '';
    const server = /^\s+server \S+ "?([^\s"]+)"?/.exec(line);
    if (server && backend) out.set(backend, [...(out.get(backend) ?? []), server[1]]);
  }
  return out;
}

const withoutServers = (conf: string) =>
  conf
    .split('\n')
    .filter((l) => !/^\s+server /.test(l))
    .join('\n');

/** The drain the server does on SIGTERM: MMS_SHUTDOWN_TIMEOUT when set, else the key's default. */
function drainSeconds(env: Record<string, string> | undefined): number {
  return Number(env?.MMS_SHUTDOWN_TIMEOUT ?? keySpec('shutdown_timeout')!.default);
}

function mibOf(quantity: string): number {
  const m = /^(\d+(?:\.\d+)?)(Mi|Gi|m|g)?$/.exec(String(quantity));
  assert.ok(m, `memory quantity ${quantity}`);
  return Number(m[1]) * ({ Mi: 1, Gi: 1024, m: 1, g: 1024 }[m[2] ?? 'Mi'] ?? 1);
}

/** A compose health check that asks the server's /ping, which answers 200 once it listens. */
function assertPingHealthCheck(service: Doc, name: string): void {
  const test: string[] = service.healthcheck?.test ?? [];
  // podman-compose 1.0.3 (Debian 12) joins an exec-form (CMD) test into a shell line that does not parse.
  assert.equal(test[0], 'CMD-SHELL', `${name}: a shell-line health check`);
  assert.equal(test.length, 2, `${name}: CMD-SHELL takes one line`);
  assert.ok(test[1].includes('http://127.0.0.1:8080/ping'), `${name}: the health check asks /ping`);
  assert.ok(service.healthcheck.interval && service.healthcheck.start_period, `${name}: interval and start_period`);
}

describe('deploy/: Kubernetes, nginx and compose files', () => {
  it('every YAML file parses', () => {
    const files = yamlFiles(kDeploy);
    assert.ok(files.length >= 7, files.join(', '));
    for (const f of files) parse(f);
  });

  it('StatefulSet: readiness on /ping, preStop, a grace period covering preStop + drain, memory limits the budget reads', () => {
    const deployment = replicas();
    const pod = deployment.spec.template.spec;
    const [c] = pod.containers;
    assert.equal(c.readinessProbe.httpGet.path, '/ping');
    assert.equal(c.livenessProbe.httpGet.path, '/ping');
    const env = Object.fromEntries(c.env.map((e: Doc) => [e.name, e.value]));
    for (const name of Object.keys(env)) {
      if (name === 'TMPDIR') continue; // where archives are extracted: see the read-only root test
      assert.ok(keySpec(name.replace(/^MMS_/, '').toLowerCase()), `${name} is MMS_<a config key>`);
    }
    const [cmd, seconds] = c.lifecycle.preStop.exec.command;
    assert.equal(cmd, 'sleep');
    assert.ok(
      pod.terminationGracePeriodSeconds >= Number(seconds) + drainSeconds(env) + kFlushSeconds,
      `grace ${pod.terminationGracePeriodSeconds} s ≥ preStop ${seconds} s + shutdown_timeout ${drainSeconds(env)} s + flush`,
    );
    assert.ok(c.resources.limits.memory, 'a memory limit: the budget comes from the cgroup');
    assert.equal(
      c.resources.requests.memory,
      c.resources.limits.memory,
      'requests = limits: the pod gets the memory its budget assumes',
    );
    assert.ok(
      mibOf(c.resources.limits.memory) > Number(keySpec('model_memory_reserve_mb')!.default),
      'room for models beyond the reserve',
    );
    assert.notEqual(env.MMS_MANAGEMENT_ADDRESS?.includes('0.0.0.0'), true, 'management is not exposed');
  });

  it('StatefulSet: models come from model_repository into a size-limited emptyDir, with no PersistentVolumeClaim', () => {
    assert.deepEqual(
      k8s().filter((d) => d.kind === 'PersistentVolumeClaim'),
      [],
      'no PVC: the common storage classes cannot give ReadOnlyMany',
    );
    const deployment = replicas();
    const pod = deployment.spec.template.spec;
    const [c] = pod.containers;
    const env = Object.fromEntries(c.env.map((e: Doc) => [e.name, e.value]));
    // Set from settings.env by kustomization.yaml's replacements (test/e2e/deploy-settings.test.ts).
    assert.match(env.MMS_MODEL_REPOSITORY, /settings\.env/);
    const mount = c.volumeMounts.find((m: Doc) => m.mountPath === env.MMS_MODEL_CACHE_DIR);
    assert.ok(mount, 'the disk cache is a mounted volume');
    const volume = pod.volumes.find((v: Doc) => v.name === mount.name);
    assert.ok(volume.emptyDir, 'an emptyDir');
    assert.ok(
      Number(env.MMS_MODEL_CACHE_DISK_MB) < mibOf(volume.emptyDir.sizeLimit),
      'model_cache_disk_mb below the sizeLimit: the kubelet evicts pods past it',
    );
    assert.ok(pod.volumes.every((v: Doc) => !v.persistentVolumeClaim));
    const [account] = ofKind('ServiceAccount');
    assert.equal(pod.serviceAccountName, account.metadata.name);
    assert.match(
      account.metadata.annotations['eks.amazonaws.com/role-arn'],
      /settings\.env/,
      'IRSA: the role the SDK default chain assumes, from settings.env',
    );
  });

  it('Services, HPA and Ingress point at the StatefulSet, whose pods the headless Service names; the Ingress hashes on the model name', () => {
    const deployment = replicas();
    const labels = deployment.spec.template.metadata.labels;
    const services = ofKind('Service');
    for (const svc of services) {
      for (const [k, v] of Object.entries(svc.spec.selector))
        assert.equal(labels[k], v, `${svc.metadata.name} selector ${k}`);
    }
    const service = services.find((svc) => svc.metadata.name === 'sagemaker-mme-node');
    const headless = services.find((svc) => svc.metadata.name === deployment.spec.serviceName);
    assert.equal(headless?.spec.clusterIP, 'None', 'serviceName is a headless Service');
    const [hpa] = ofKind('HorizontalPodAutoscaler');
    assert.deepEqual(
      [hpa.spec.scaleTargetRef.kind, hpa.spec.scaleTargetRef.name],
      ['StatefulSet', deployment.metadata.name],
    );
    assert.ok(
      hpa.spec.metrics.every((m: Doc) => m.resource?.name !== 'memory'),
      'a self-managed cache fills its memory: never scale on it',
    );
    const [ingress] = ofKind('Ingress', 'k8s-overlays/ingress-nginx');
    assert.equal(ingress.metadata.annotations['nginx.ingress.kubernetes.io/upstream-hash-by'], '$mme_model');
    const paths = ingress.spec.rules.flatMap((r: Doc) => r.http.paths);
    assert.deepEqual(paths.map((p: Doc) => p.path).sort(), [
      '/invocations',
      '/models/[^/]+/invoke',
      '/predictions/[^/]+',
      '/v2/models/[^/]+/.*',
    ]);
    for (const p of paths) assert.equal(p.backend.service.name, service.metadata.name);
  });

  it('the controller ConfigMap defines $mme_model with exactly deploy/nginx/model-key.conf and keeps underscore headers', () => {
    const [cm] = ofKind('ConfigMap', 'k8s-overlays/ingress-nginx');
    assert.equal(cm.data['http-snippet'], fs.readFileSync(MODEL_KEY_CONF, 'utf8'));
    assert.equal(cm.data['enable-underscores-in-headers'], 'true');
  });

  it('StatefulSet: non-root, read-only root file system, no privilege escalation, no capabilities, RuntimeDefault seccomp; TMPDIR on a size-limited emptyDir', () => {
    const deployment = replicas();
    const pod = deployment.spec.template.spec;
    const [c] = pod.containers;
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.ok(pod.securityContext.runAsUser > 0, 'a non-root uid');
    assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
    const tmpdir = c.env.find((e: Doc) => e.name === 'TMPDIR').value;
    const mount = c.volumeMounts.find((m: Doc) => m.mountPath === tmpdir);
    assert.ok(mount, `a volume at TMPDIR ${tmpdir}`);
    const volume = pod.volumes.find((v: Doc) => v.name === mount.name);
    assert.ok(volume.emptyDir?.sizeLimit, 'an emptyDir with a sizeLimit');
    assert.ok(
      c.resources.requests['ephemeral-storage'] && c.resources.limits['ephemeral-storage'],
      'ephemeral-storage requested and limited',
    );
  });

  it('a PodDisruptionBudget, topology spread over nodes and zones, and Prometheus scrape annotations on the metrics port', () => {
    const deployment = replicas();
    const labels = deployment.spec.template.metadata.labels;
    const [pdb] = ofKind('PodDisruptionBudget');
    assert.equal(pdb.spec.maxUnavailable, 1);
    for (const [k, v] of Object.entries(pdb.spec.selector.matchLabels)) assert.equal(labels[k], v, `PDB selector ${k}`);
    const pod = deployment.spec.template.spec;
    assert.deepEqual(
      pod.topologySpreadConstraints.map((t: Doc) => t.topologyKey),
      ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'],
    );
    const annotations = deployment.spec.template.metadata.annotations;
    assert.equal(annotations['prometheus.io/scrape'], 'true');
    const metricsPort = pod.containers[0].ports.find((p: Doc) => p.name === 'metrics').containerPort;
    assert.equal(Number(annotations['prometheus.io/port']), metricsPort);
  });

  it('kubectl kustomize renders the base and every overlay: app.kubernetes.io labels everywhere, the image from images:, the hashing each router is configured with', function () {
    const kubectl = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((p) => fs.existsSync(p));
    if (!kubectl) skipBecause(this, 'kubectl', 'kubectl is not installed; install it to render the overlays');
    const dirs = ['k8s', ...fs.readdirSync(kOverlays).map((d) => `k8s-overlays/${d}`)];
    const [kustomization] = ofKind('Kustomization');
    const [image] = kustomization.images;
    const rendered = new Map(dirs.map((dir) => [dir, render(kubectl, dir)]));
    for (const [dir, objects] of rendered) {
      for (const o of objects) {
        assert.equal(
          o.metadata.labels?.['app.kubernetes.io/name'],
          'sagemaker-mme-node',
          `${dir}: ${o.kind} app.kubernetes.io/name`,
        );
      }
      const statefulSet = replicas(objects);
      assert.equal(
        statefulSet.spec.template.spec.containers[0].image,
        `${image.newName}:${image.newTag}`,
        `${dir}: image from images:`,
      );
      assert.equal(
        statefulSet.spec.template.metadata.labels['app.kubernetes.io/version'],
        image.newTag,
        `${dir}: version label is the image tag`,
      );
      assert.ok(
        objects.some((o) => o.kind === 'PodDisruptionBudget'),
        `${dir}: PodDisruptionBudget`,
      );
      // No Service may select another component's pods: the router's pods are not model servers.
      for (const svc of objects.filter((o) => o.kind === 'Service')) {
        const selected = objects.filter(
          (o) =>
            o.spec?.template &&
            Object.entries(svc.spec.selector).every(([k, v]) => o.spec.template.metadata.labels[k] === v),
        );
        assert.equal(selected.length, 1, `${dir}: Service ${svc.metadata.name} selects one workload`);
      }
    }
    assert.deepEqual(
      [...rendered.keys()].sort(),
      [
        'k8s',
        'k8s-overlays/gateway-api',
        'k8s-overlays/haproxy-router',
        'k8s-overlays/ingress-nginx',
        'k8s-overlays/nginx-router',
        'k8s-overlays/prometheus-operator',
        'k8s-overlays/tls',
      ],
      'the overlays this test knows',
    );

    const ingress = rendered.get('k8s-overlays/ingress-nginx')!.find((o) => o.kind === 'Ingress');
    assert.equal(ingress.metadata.annotations['nginx.ingress.kubernetes.io/upstream-hash-by'], '$mme_model');

    const routed = rendered.get('k8s-overlays/nginx-router')!;
    const config = routed.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('mme-router-'));
    assert.equal(
      config.data['nginx.conf'],
      fs.readFileSync(path.join(kNginx, 'nginx.conf'), 'utf8'),
      'the router runs deploy/nginx/nginx.conf',
    );
    assert.equal(config.data['model-key.conf'], fs.readFileSync(MODEL_KEY_CONF, 'utf8'), 'and its model-key.conf');
    const router = routed.find((o) => o.kind === 'Deployment' && o.metadata.name === 'sagemaker-mme-node-router').spec
      .template.spec;
    assert.equal(
      router.volumes.find((v: Doc) => v.name === 'config').configMap.name,
      config.metadata.name,
      'the router mounts the generated ConfigMap',
    );
    const mounts = new Map<string, string>(
      router.containers[0].volumeMounts
        .filter((m: Doc) => m.name === 'config')
        .map((m: Doc) => [m.mountPath, m.subPath]),
    );
    assert.equal(mounts.get('/etc/nginx/nginx.conf'), 'nginx.conf');
    assert.equal(mounts.get('/etc/nginx/mme/model-key.conf'), 'model-key.conf');
    const env = new Map<string, string>(router.containers[0].env.map((e: Doc) => [e.name, e.value]));
    for (const list of ['replicas-http.conf', 'replicas-grpc.conf']) {
      assert.equal(mounts.get(`/etc/nginx/templates/${list}.template`), `${list}.template`);
      assert.ok(
        fs
          .readFileSync(path.join(kNginx, 'nginx.conf'), 'utf8')
          .includes(`include ${env.get('NGINX_ENVSUBST_OUTPUT_DIR')}/${list};`),
        `nginx.conf includes the filled-in ${list}`,
      );
    }

    const bounded = rendered.get('k8s-overlays/haproxy-router')!;
    const haproxyConfig = bounded.find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('mme-haproxy-router-'),
    );
    assert.equal(
      haproxyConfig.data['haproxy.cfg'],
      fs.readFileSync(path.join(kOverlays, 'haproxy-router', 'haproxy.cfg'), 'utf8'),
    );
    const haproxyPod = bounded.find((o) => o.kind === 'Deployment' && o.metadata.name === 'sagemaker-mme-node-router')
      .spec.template.spec;
    assert.equal(haproxyPod.volumes.find((v: Doc) => v.name === 'config').configMap.name, haproxyConfig.metadata.name);
    assert.deepEqual(
      haproxyPod.containers[0].volumeMounts.map((m: Doc) => [m.mountPath, m.subPath]),
      [['/usr/local/etc/haproxy/haproxy.cfg', 'haproxy.cfg']],
      'HAProxy reads the generated haproxy.cfg where the official image looks',
    );

    const gateway = rendered.get('k8s-overlays/gateway-api')!;
    const [policy] = gateway.filter((o) => o.kind === 'BackendTrafficPolicy');
    assert.equal(policy.spec.loadBalancer.type, 'ConsistentHash');
    assert.equal(policy.spec.loadBalancer.consistentHash.type, 'Headers');
    assert.deepEqual(
      policy.spec.loadBalancer.consistentHash.headers.map((h: Doc) => h.name),
      ['X-Amzn-SageMaker-Target-Model', 'target-model'],
    );
    const routes = gateway.filter((o) => o.kind === 'HTTPRoute' || o.kind === 'GRPCRoute');
    assert.deepEqual(
      policy.spec.targetRefs.map((t: Doc) => `${t.kind}/${t.name}`).sort(),
      routes.map((r) => `${r.kind}/${r.metadata.name}`).sort(),
      'the policy covers every route',
    );
    const service = gateway.find((o) => o.kind === 'Service' && o.metadata.name === 'sagemaker-mme-node');
    const ports = new Map<number, string>(service.spec.ports.map((p: Doc) => [p.port, p.name]));
    for (const r of routes) {
      for (const ref of r.spec.rules.flatMap((rule: Doc) => rule.backendRefs)) {
        assert.equal(ref.name, service.metadata.name);
        assert.equal(
          ports.get(ref.port),
          r.kind === 'GRPCRoute' ? 'grpc' : 'http',
          `${r.kind} goes to the ${ports.get(ref.port)} port`,
        );
      }
    }
    const paths = routes
      .find((r) => r.kind === 'HTTPRoute')
      .spec.rules.flatMap((rule: Doc) => rule.matches.map((m: Doc) => m.path.value));
    assert.deepEqual(paths, ['/invocations', '/models/[^/]+/invoke/?', '/predictions/[^/]+/?', '/v2/models/']);

    // TLS: cert-manager's Secret mounted whole (a subPath mount never sees a renewal), the files the
    // tls_* keys name inside it, https:// on the data plane and its probes.
    const secured = rendered.get('k8s-overlays/tls')!;
    const [certificate] = secured.filter((o) => o.kind === 'Certificate');
    const tlsPod = replicas(secured).spec.template.spec;
    const tlsVolume = tlsPod.volumes.find((v: Doc) => v.secret?.secretName === certificate.spec.secretName);
    assert.ok(tlsVolume, "the pod mounts the Certificate's Secret");
    const tlsMount = tlsPod.containers[0].volumeMounts.find((m: Doc) => m.name === tlsVolume.name);
    assert.equal(tlsMount.subPath, undefined);
    const tlsEnv = new Map<string, string>(tlsPod.containers[0].env.map((e: Doc) => [e.name, e.value]));
    for (const key of ['MMS_TLS_CERT_FILE', 'MMS_TLS_KEY_FILE'])
      assert.equal(path.dirname(tlsEnv.get(key)!), tlsMount.mountPath, `${key} is in the mounted Secret`);
    assert.match(tlsEnv.get('MMS_INFERENCE_ADDRESS')!, /^https:\/\//);
    for (const probe of ['readinessProbe', 'livenessProbe'])
      assert.equal(tlsPod.containers[0][probe].httpGet.scheme, 'HTTPS', probe);
    assert.ok(certificate.spec.dnsNames.includes('sagemaker-mme-node'));

    const monitored = rendered.get('k8s-overlays/prometheus-operator')!;
    const [monitor] = monitored.filter((o) => o.kind === 'ServiceMonitor');
    const monitoredService = monitored.find((o) => o.kind === 'Service' && o.metadata.name === 'sagemaker-mme-node');
    assert.deepEqual(
      monitor.spec.endpoints.map((e: Doc) => e.port),
      ['metrics'],
    );
    assert.ok(monitoredService.spec.ports.some((p: Doc) => p.name === 'metrics'));
    for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels))
      assert.equal(monitoredService.metadata.labels[k], v, `ServiceMonitor selector ${k}`);
  });

  it('nginx-router: byte-identical copies of deploy/nginx, and replica lists naming every StatefulSet pod the HPA may run, on its ports', () => {
    const router = path.join(kOverlays, 'nginx-router');
    for (const file of ['nginx.conf', 'model-key.conf']) {
      assert.equal(
        fs.readFileSync(path.join(router, file), 'utf8'),
        fs.readFileSync(path.join(kNginx, file), 'utf8'),
        `deploy/k8s-overlays/nginx-router/${file} is a copy of deploy/nginx/${file}: copy it again after changing the original`,
      );
    }
    const set = replicas();
    const [hpa] = ofKind('HorizontalPodAutoscaler');
    const ports = new Map<string, number>(
      set.spec.template.spec.containers[0].ports.map((p: Doc) => [p.name, p.containerPort]),
    );
    for (const [list, port] of [
      ['replicas-http.conf.template', 'http'],
      ['replicas-grpc.conf.template', 'grpc'],
    ] as const) {
      const servers = serverLines(path.join(router, list));
      assert.deepEqual(
        servers.map((s) => s.host),
        Array.from(
          { length: hpa.spec.maxReplicas },
          (_, i) => `${set.metadata.name}-${i}.${set.spec.serviceName}.\${POD_NAMESPACE}.svc.\${CLUSTER_DOMAIN}`,
        ),
        `${list}: one name per pod up to maxReplicas`,
      );
      assert.ok(
        servers.every((s) => s.port === ports.get(port)),
        `${list}: the ${port} port`,
      );
      assert.match(
        fs.readFileSync(path.join(router, list), 'utf8'),
        /^server \S+ resolve;$/m,
        `${list}: names re-resolved as pods move`,
      );
    }
  });

  it('haproxy-router: deploy/haproxy/haproxy.cfg with server lines naming every StatefulSet pod the HPA may run, on its ports', () => {
    const deployed = fs.readFileSync(path.join(kHaproxy, 'haproxy.cfg'), 'utf8');
    const overlay = fs.readFileSync(path.join(kOverlays, 'haproxy-router', 'haproxy.cfg'), 'utf8');
    assert.equal(
      withoutServers(overlay),
      withoutServers(deployed),
      'deploy/k8s-overlays/haproxy-router/haproxy.cfg is deploy/haproxy/haproxy.cfg but for its server lines: copy it again after changing the original',
    );
    const set = replicas();
    const [hpa] = ofKind('HorizontalPodAutoscaler');
    const ports = new Map<string, number>(
      set.spec.template.spec.containers[0].ports.map((p: Doc) => [p.name, p.containerPort]),
    );
    const names = Array.from(
      { length: hpa.spec.maxReplicas },
      (_, i) => `${set.metadata.name}-${i}.${set.spec.serviceName}.\${POD_NAMESPACE}.svc.\${CLUSTER_DOMAIN}`,
    );
    const servers = haproxyServers(overlay);
    assert.deepEqual(
      servers.get('mme'),
      names.map((n) => `${n}:${ports.get('http')}`),
      'HTTP: one name per pod up to maxReplicas',
    );
    assert.deepEqual(
      servers.get('mme_grpc'),
      names.map((n) => `${n}:${ports.get('grpc')}`),
      'gRPC: the same, in the same order',
    );
  });

  it("haproxy: both backends hash the model with bounded loads over the same replicas in the same order, check /ping, and compose runs deploy/nginx's replicas behind it", () => {
    const conf = fs.readFileSync(path.join(kHaproxy, 'haproxy.cfg'), 'utf8');
    for (const backend of ['mme', 'mme_grpc']) {
      const section = new RegExp(`^backend ${backend} [^]*?(?=^\\S|(?![^]))`, 'm').exec(conf)?.[0] ?? '';
      assert.match(section, /^\s+balance hash var\(txn\.mme_model\)$/m, `${backend}: hashes the model`);
      assert.match(section, /^\s+hash-type consistent$/m, `${backend}: consistent`);
      assert.match(section, /^\s+hash-balance-factor 1\d\d$/m, `${backend}: bounded loads`);
      assert.match(section, /^\s+http-check send meth GET uri \/ping /m, `${backend}: checks /ping`);
    }
    const servers = haproxyServers(conf);
    const hosts = (list: string[] | undefined) => list?.map((a) => a.split(':')[0]);
    assert.deepEqual(hosts(servers.get('mme')), ['mme-1', 'mme-2', 'mme-3']);
    assert.deepEqual(hosts(servers.get('mme_grpc')), hosts(servers.get('mme')), 'the same ring for HTTP and gRPC');
    assert.match(conf, /^frontend grpc from \S+\n\s+bind :7070 proto h2$/m, 'gRPC: cleartext HTTP/2 in');
    assert.ok(
      conf
        .split('\n')
        .filter((l) => /^\s+server \S+ \S+:7070/.test(l))
        .every((l) => / proto h2 check-proto h1 port 8080$/.test(l)),
      'gRPC: HTTP/2 out, checked over HTTP/1.1 on the HTTP port',
    );
    const [compose] = parse(path.join(kHaproxy, 'compose.yaml'));
    const names = Object.keys(compose.services).filter((s) => s.startsWith('mme-'));
    assert.deepEqual(names, ['mme-1', 'mme-2', 'mme-3']);
    for (const name of names)
      assert.deepEqual(compose.services[name].extends, { file: '../nginx/compose.yaml', service: name });
    assert.deepEqual(
      compose.services.haproxy.depends_on,
      Object.fromEntries(names.map((n) => [n, { condition: 'service_healthy' }])),
    );
    assert.deepEqual(compose.services.haproxy.volumes, ['./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro']);
  });

  it('kustomization lists files that exist', () => {
    const [kustomization] = ofKind('Kustomization');
    for (const r of kustomization.resources) assert.ok(fs.existsSync(path.join(kDeploy, 'k8s', r)), r);
  });

  it('compose: three replicas with memory limits, a stop grace covering the drain and a /ping health check, behind nginx waiting for them healthy and hashing on the model', () => {
    const [compose] = parse(path.join(kNginx, 'compose.yaml'));
    const names = Object.keys(compose.services).filter((s) => s.startsWith('mme-'));
    assert.deepEqual(names, ['mme-1', 'mme-2', 'mme-3']);
    for (const name of names) {
      const s = compose.services[name];
      assert.ok(s.mem_limit, `${name} mem_limit`);
      assert.ok(
        parseInt(s.stop_grace_period, 10) >= drainSeconds(s.environment) + kFlushSeconds,
        `${name} stop_grace_period`,
      );
      assertPingHealthCheck(s, name);
      assert.equal(s.environment.MMS_GRPC_INFERENCE_PORT, '7070', `${name}: gRPC on the port replicas-grpc.conf names`);
    }
    assert.deepEqual(
      compose.services.nginx.depends_on,
      Object.fromEntries(names.map((n) => [n, { condition: 'service_healthy' }])),
    );
    const conf = fs.readFileSync(path.join(kNginx, 'nginx.conf'), 'utf8');
    assert.match(conf, /include \/etc\/nginx\/mme\/model-key\.conf;/);
    assert.equal([...conf.matchAll(/hash \$mme_model consistent;/g)].length, 2, 'HTTP and gRPC both hash on the model');
    assert.match(conf, /underscores_in_headers on;/);
    assert.deepEqual(
      serverLines(path.join(kNginx, 'replicas-http.conf')),
      names.map((host) => ({ host, port: 8080 })),
    );
    assert.deepEqual(
      serverLines(path.join(kNginx, 'replicas-grpc.conf')),
      names.map((host) => ({ host, port: 7070 })),
    );
    const mounts: string[] = compose.services.nginx.volumes;
    for (const file of ['model-key.conf', 'replicas-http.conf', 'replicas-grpc.conf']) {
      assert.ok(mounts.includes(`./${file}:/etc/nginx/mme/${file}:ro`), `nginx mounts ${file}`);
    }
  });

  it("compose: the quick start's single server runs the image scripts/docker-build.sh tags, mounts model-store and checks /ping", () => {
    const [compose] = parse(path.join(kDocker, 'compose.yaml'));
    const [name, ...others] = Object.keys(compose.services);
    assert.deepEqual(others, [], 'one service');
    const s = compose.services[name];
    assert.equal(s.image, 'sagemaker-mme-node:latest');
    assert.ok(
      fs
        .readFileSync(path.join(kDocker, '..', 'scripts', 'docker-build.sh'), 'utf8')
        .includes('-t sagemaker-mme-node:latest'),
      'the build script tags it',
    );
    const [store] = s.volumes[0].split(':');
    assert.ok(fs.existsSync(path.resolve(kDocker, store)), `${store} exists next to docker/`);
    assertPingHealthCheck(s, name);
    assert.ok(
      parseInt(s.stop_grace_period, 10) >= drainSeconds(s.environment) + kFlushSeconds,
      'stop_grace_period covers the drain',
    );
  });
});
