import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENV_VARS, loadStageConfig } from '../../src/stream/stage-config.ts';
import { byKind, container, OVERLAYS, RenderedOverlays, WORKLOAD_KINDS, type Json } from '../support/deploy-render.ts';
import { run } from '../support/deploy-tools.ts';

// The rendered workloads of deploy/k8s against the stage's real config schema and each other:
// their config and environment, probes, scaling and Kafka identity, volumes, the paths the
// evaluator and the memory updater open, the GPU overlay and the index-build Job's script.

const deploy = new RenderedOverlays();
before(() => deploy.start());
after(() => deploy.stop());

/** Environment variables the image and Node read themselves, besides the stage's ENV_VARS. */
const RUNTIME_ENV = new Set(['NODE_EXTRA_CA_CERTS', 'CUILINK_CACHE_DIR']);

/** `$(NAME)` replaced by the variable as the kubelet does in env values, command and args (an undefined one stays as written; `$$` is `$`). */
const expandVars = (text: string, env: Record<string, string>): string => text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m: string, name?: string) => (name === undefined ? '$' : (env[name] ?? m)));

/**
 * A container's environment as the kubelet builds it for the pod `podName`: envFrom first, then
 * `env` in order, `$(NAME)` expanded from the variables defined before it (a reference to an
 * undefined one stays as written), `fieldRef: metadata.name` the pod's name, secret keys from
 * `secret`. Each variable also records whether some later one references it.
 */
function podEnv(workload: Json, podName: string, shared: Record<string, string>, secret: Record<string, string>) {
  const env: Record<string, string> = { ...shared };
  const declared: Json[] = container(workload).env ?? [];
  for (const v of declared) {
    let value: string;
    if (v.value !== undefined) value = expandVars(v.value as string, env);
    else if (v.valueFrom?.secretKeyRef) value = secret[v.valueFrom.secretKeyRef.key]!;
    else if (v.valueFrom?.fieldRef?.fieldPath === 'metadata.name') value = podName;
    else assert.fail(`${workload.metadata.name}: ${v.name} comes from a source this test does not model`);
    env[v.name] = value;
  }
  const referenced = (name: string) => declared.some((v) => typeof v.value === 'string' && v.value.includes(`$(${name})`));
  return { env, declared, referenced };
}

test('the stage config and environment of the manifests pass the stage\'s own config schema', (t) => {
  if (deploy.setupSkip) return t.skip(deploy.setupSkip);
  for (const overlay of OVERLAYS) {
    const docs = deploy.docs(overlay);
    const stageJson = docs.find((d) => d.kind === 'ConfigMap' && d.data?.['stage.json'])!.data['stage.json'] as string;
    const shared: Record<string, string> = docs.find((d) => d.kind === 'ConfigMap' && d.data?.CUILINK_BROKERS)!.data;
    const secret = byKind(docs, 'Secret', 'cuilink-kafka-credentials').stringData;
    for (const name of Object.keys(shared)) assert.ok(ENV_VARS.some(([n]) => n === name) || RUNTIME_ENV.has(name), `cuilink-env: ${name} is read by nobody`);
    const file = join(deploy.scratch, `${overlay}-stage.json`);
    writeFileSync(file, stageJson);
    const configOf = (workload: Json, podName = `${workload.metadata.name}-0`, extra: Record<string, string> = {}) => {
      const { env, declared, referenced } = podEnv(workload, podName, shared, secret);
      // A variable the stage does not read is only there to build others ($(POD_NAME)).
      for (const v of declared) assert.ok(ENV_VARS.some(([name]) => name === v.name) || RUNTIME_ENV.has(v.name) || referenced(v.name), `${workload.metadata.name}: ${v.name} is read by nobody`);
      return { env, config: loadStageConfig({ file, env: { ...env, ...extra } }) };
    };
    const evaluator = byKind(docs, 'Deployment', 'cuilink-evaluator');
    configOf(evaluator);
    const evaluatorArgs: string[] = container(evaluator).args;
    assert.equal(evaluatorArgs[0], 'evaluator');
    assert.equal(Number(evaluatorArgs[evaluatorArgs.indexOf('--port') + 1]), container(evaluator).ports[0].containerPort, 'the evaluator serves where its probes look');
    // The updater serves /healthz (503 while its model loads: a startup probe as long as the linker's), /readyz and /metrics where its probes look.
    const updater = container(byKind(docs, 'Deployment', 'cuilink-memory-updater'));
    assert.equal(Number(updater.args[updater.args.indexOf('--port') + 1]), updater.ports[0].containerPort, 'the updater serves where its probes look');
    assert.deepEqual([updater.startupProbe.httpGet.path, updater.livenessProbe.httpGet.path, updater.readinessProbe.httpGet.path], ['/healthz', '/healthz', '/readyz']);
    assert.ok(updater.startupProbe.periodSeconds * updater.startupProbe.failureThreshold >= 300, `${overlay}: the startup probe gives the model load 5 minutes`);
    // The linker is a StatefulSet (issue #27: fencing across restarts), not a Deployment.
    assert.equal(docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'cuilink'), undefined, `${overlay}: the linker is no Deployment`);
    const linker = byKind(docs, 'StatefulSet', 'cuilink');
    const { env, config } = configOf(linker);
    assert.equal(container(linker).ports[0].containerPort, config.http.port, 'the linker serves where its probes look');
    assert.deepEqual(container(linker).args, ['run', '--config', '/etc/cuilink/stage.json']);
    assert.equal(config.sasl?.mechanism, 'scram-sha-512');
    assert.equal(config.ssl, true);

    const spec = linker.spec.template.spec;
    assert.ok(spec.terminationGracePeriodSeconds * 1000 > config.drainTimeoutMs + config.consumer.sessionTimeoutMs / 2, `${overlay}: grace period must outlast the drain`);
    assert.equal(container(linker).readinessProbe.httpGet.path, '/readyz');
    assert.equal(container(linker).livenessProbe.httpGet.path, '/healthz');
    // Liveness starts once the startup probe passes: on /healthz, 503 until the index and models are loaded (test/unit/cli/stage-runtime-health.test.ts).
    assert.equal(container(linker).startupProbe.httpGet.path, '/healthz', `${overlay}: the startup probe waits for the load`);

    const scaled = byKind(docs, 'ScaledObject', 'cuilink');
    const trigger = scaled.spec.triggers[0].metadata;
    assert.equal(trigger.consumerGroup, config.groupId);
    assert.equal(trigger.topic, config.topics.input);
    assert.equal(trigger.bootstrapServers, env.CUILINK_BROKERS);
    assert.ok(scaled.spec.maxReplicaCount <= inputPartitions(), `${overlay}: more linkers than input partitions`);
    assert.equal(trigger.allowIdleConsumers, 'false');
    // KEDA scales the StatefulSet; scaleTargetRef without a kind means a Deployment (KEDA's default).
    assert.equal(scaled.spec.scaleTargetRef.kind ?? 'Deployment', 'StatefulSet', `${overlay}: KEDA scales the linker StatefulSet`);
    assert.equal(scaled.spec.scaleTargetRef.apiVersion ?? 'apps/v1', 'apps/v1');
    assert.equal(scaled.spec.scaleTargetRef.name, linker.metadata.name);
    // Kubernetes: a workload an HPA scales leaves spec.replicas out of its manifest, or every apply
    // of the manifest (server-side, GitOps sync) sets the count back, and each change is a rebalance.
    assert.equal(linker.spec.replicas, undefined, `${overlay}: KEDA owns the linker's replica count`);

    // Stable pod names (cuilink-0, cuilink-1, …) carry a stable Kafka identity: the client id is the
    // pod name and the transactional id `<groupId>-<pod name>`, so a pod replacing cuilink-3 takes
    // cuilink-3's transactional id and fences the old one's producer (initTransactions). Checked
    // in exactly-once mode, as the stage resolves it (src/stream/linking-stage.ts: an explicit
    // transactionalId, else `<groupId>-<clientId>`).
    assert.equal(linker.spec.podManagementPolicy, 'Parallel', `${overlay}: scaling is not serialized by ordinal`);
    const governing = byKind(docs, 'Service', linker.spec.serviceName);
    assert.equal(governing.spec.clusterIP, 'None', `${overlay}: the StatefulSet's governing Service is headless`);
    for (const [k, v] of Object.entries(governing.spec.selector as Record<string, string>)) assert.equal(linker.spec.template.metadata.labels[k], v, 'the governing Service selects the linker pods');
    const podNameVar = (container(linker).env as Json[]).filter((v) => v.valueFrom?.fieldRef?.fieldPath === 'metadata.name');
    assert.equal(podNameVar.length, 1, `${overlay}: the pod name comes from the downward API`);
    const ids = new Set<string>();
    for (const podName of ['cuilink-0', 'cuilink-3']) {
      const { config: eos } = configOf(linker, podName, { CUILINK_DELIVERY: 'exactly-once' });
      assert.equal(eos.delivery, 'exactly-once');
      assert.equal(eos.clientId, podName, `${overlay}: the client id is the pod name`);
      assert.equal(eos.transactionalId, `${config.groupId}-${podName}`, `${overlay}: the transactional id is set explicitly from the pod name, prefixed by the stage's groupId`);
      ids.add(eos.transactionalId);
    }
    assert.equal(ids.size, 2, 'ordinals do not share a transactional id');

    // The ServiceMonitor finds both Services, on a port each of them has, at the path they serve.
    const monitor = byKind(docs, 'ServiceMonitor', 'cuilink');
    const services = docs.filter((d) => d.kind === 'Service');
    assert.deepEqual(services.map((d) => d.metadata.name).sort(), ['cuilink', 'cuilink-evaluator', 'cuilink-memory-updater']);
    for (const service of services) {
      for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels as Record<string, string>)) assert.equal(service.metadata.labels[k], v, `${service.metadata.name} is selected`);
      assert.ok(monitor.spec.endpoints.every((e: Json) => service.spec.ports.some((p: Json) => p.name === e.port)), `${service.metadata.name} has the scraped port`);
      const target = docs.find((d) => (d.kind === 'Deployment' || d.kind === 'StatefulSet') && Object.entries(service.spec.selector as Record<string, string>).every(([k, v]) => d.spec.template.metadata.labels[k] === v));
      assert.ok(target, `${service.metadata.name} selects a workload's pods`);
    }
    assert.equal(monitor.spec.endpoints[0].path, '/metrics');
  }
});

test('the linker reads the index and memory volumes read-only, the index-build Job and the memory updater write them, and nothing else is writable', (t) => {
  if (deploy.setupSkip) return t.skip(deploy.setupSkip);
  const docs = deploy.docs('cpu');
  const mountOf = (podSpec: Json, volume: string) => {
    const claim = podSpec.volumes.find((v: Json) => v.name === volume);
    const mount = podSpec.containers[0].volumeMounts.find((m: Json) => m.name === volume);
    return { claim: claim?.persistentVolumeClaim, mount };
  };
  const linker = mountOf(byKind(docs, 'StatefulSet', 'cuilink').spec.template.spec, 'indexes');
  const job = mountOf(byKind(docs, 'Job', 'cuilink-index-build').spec.template.spec, 'indexes');
  assert.equal(linker.claim.claimName, job.claim.claimName);
  assert.equal(linker.claim.readOnly, true);
  assert.equal(linker.mount.readOnly, true);
  assert.notEqual(job.mount.readOnly, true);
  assert.equal(byKind(docs, 'PersistentVolumeClaim', linker.claim.claimName).spec.accessModes[0], 'ReadWriteMany');
  const env = docs.find((d) => d.kind === 'ConfigMap' && d.data?.CUILINK_INDEX_DIR)!.data;
  assert.ok(env.CUILINK_INDEX_DIR.startsWith(linker.mount.mountPath), 'CUILINK_INDEX_DIR is on the index volume');
  // The memory: one updater writes versions, every linker reads CURRENT from the same claim (PHI: docs/memory.md).
  const linkerMemory = mountOf(byKind(docs, 'StatefulSet', 'cuilink').spec.template.spec, 'memory');
  const updaterPod = byKind(docs, 'Deployment', 'cuilink-memory-updater').spec.template.spec;
  const updaterMemory = mountOf(updaterPod, 'memory');
  assert.equal(linkerMemory.claim.claimName, updaterMemory.claim.claimName);
  assert.equal(linkerMemory.claim.readOnly, true);
  assert.equal(linkerMemory.mount.readOnly, true);
  assert.notEqual(updaterMemory.mount.readOnly, true);
  assert.equal(byKind(docs, 'Deployment', 'cuilink-memory-updater').spec.replicas, 1, 'one writer');
  assert.equal(byKind(docs, 'PersistentVolumeClaim', linkerMemory.claim.claimName).spec.accessModes[0], 'ReadWriteMany');
  assert.equal(env.CUILINK_MEMORY, linkerMemory.mount.mountPath, 'the linkers serve the memory root the updater writes');
  const args = (updaterPod.containers[0].args as string[]).map((a) => expandVars(a, env));
  assert.equal(args[args.indexOf('--memory') + 1], updaterMemory.mount.mountPath);
  const evaluatorArgs: string[] = byKind(docs, 'Deployment', 'cuilink-evaluator').spec.template.spec.containers[0].args;
  assert.equal(evaluatorArgs[evaluatorArgs.indexOf('--learn-fraction') + 1], args[args.indexOf('--learn-fraction') + 1], 'the evaluator scores exactly the notes the updater does not learn');
  const workloads = docs.filter((d) => WORKLOAD_KINDS.has(d.kind));
  assert.ok(workloads.some((d) => d.kind === 'StatefulSet'), 'the linker is among the workloads checked');
  for (const workload of workloads) {
    const pod = workload.spec.template.spec;
    assert.equal(pod.securityContext.runAsNonRoot, true, workload.metadata.name);
    for (const c of pod.containers) {
      assert.equal(c.securityContext.readOnlyRootFilesystem, true, `${workload.metadata.name}/${c.name}`);
      assert.ok(c.volumeMounts.some((m: Json) => m.mountPath === '/tmp'), `${workload.metadata.name} has a writable /tmp`);
    }
  }
  const pdb = byKind(docs, 'PodDisruptionBudget', 'cuilink');
  assert.deepEqual(pdb.spec.selector.matchLabels, byKind(docs, 'StatefulSet', 'cuilink').spec.selector.matchLabels);
});

test('the evaluator and the memory updater open the index and the memory the linkers are given, also once an operator pins an index version or moves the memory', (t) => {
  if (deploy.setupSkip) return t.skip(deploy.setupSkip);
  // deploy/README.md: strict mode pins CUILINK_INDEX_DIR to a version directory (CURRENT is not
  // moved), and a new model needs a new memory root (CUILINK_MEMORY); one ConfigMap edit each.
  const variants: Record<string, string>[] = [{}, { CUILINK_INDEX_DIR: '/srv/cuilink/indexes/kb-v2', CUILINK_MEMORY: '/var/lib/cuilink-memory/model-b' }];
  for (const overlay of OVERLAYS) {
    const docs = deploy.docs(overlay);
    const file = join(deploy.scratch, `${overlay}-paths-stage.json`);
    writeFileSync(file, docs.find((d) => d.kind === 'ConfigMap' && d.data?.['stage.json'])!.data['stage.json'] as string);
    const base: Record<string, string> = docs.find((d) => d.kind === 'ConfigMap' && d.data?.CUILINK_BROKERS)!.data;
    const secret = byKind(docs, 'Secret', 'cuilink-kafka-credentials').stringData;
    for (const variant of variants) {
      const shared = { ...base, ...variant };
      const { env } = podEnv(byKind(docs, 'StatefulSet', 'cuilink'), 'cuilink-0', shared, secret);
      const { linker } = loadStageConfig({ file, env });
      const flagOf = (deployment: string, flag: string) => {
        const workload = byKind(docs, 'Deployment', deployment);
        const args = (container(workload).args as string[]).map((a) => expandVars(a, podEnv(workload, `${deployment}-0`, shared, secret).env));
        return args[args.indexOf(flag) + 1];
      };
      const what = `${overlay} ${JSON.stringify(variant)}`;
      assert.equal(flagOf('cuilink-evaluator', '--index'), linker.indexDir, `${what}: the evaluator scores against the KB the linkers serve`);
      assert.equal(flagOf('cuilink-memory-updater', '--index'), linker.indexDir, `${what}: the memory updater encodes with the linkers' bi-encoder`);
      assert.equal(flagOf('cuilink-memory-updater', '--memory'), linker.memoryDir, `${what}: the memory updater writes the memory the linkers serve`);
    }
  }
});

test('the gpu overlay asks for a GPU on a GPU node with the CUDA image; the cpu overlay does not', (t) => {
  if (deploy.setupSkip) return t.skip(deploy.setupSkip);
  const gpu = byKind(deploy.docs('gpu'), 'StatefulSet', 'cuilink').spec.template.spec;
  const cpu = byKind(deploy.docs('cpu'), 'StatefulSet', 'cuilink').spec.template.spec;
  assert.equal(gpu.containers[0].resources.limits['nvidia.com/gpu'], '1');
  assert.ok(gpu.tolerations.some((x: Json) => x.key === 'nvidia.com/gpu'));
  assert.ok(Object.keys(gpu.nodeSelector).some((k) => k.startsWith('nvidia.com/')));
  assert.match(gpu.containers[0].image, /cuda/);
  assert.equal(cpu.containers[0].resources.limits['nvidia.com/gpu'], undefined);
  assert.equal(cpu.nodeSelector, undefined);
});

function inputPartitions(): number {
  const compose = readFileSync('deploy/compose/compose.yaml', 'utf8');
  const match = compose.match(/cuilink\.notes:(\d+)/);
  assert.ok(match, 'compose creates cuilink.notes with a partition count');
  return Number(match[1]);
}

test('the index-build Job builds and activates a new version once; re-created over an existing one (apply -k after its TTL) it builds nothing and leaves CURRENT alone', async (t) => {
  if (deploy.setupSkip) return t.skip(deploy.setupSkip);
  const job = byKind(deploy.docs('cpu'), 'Job', 'cuilink-index-build');
  const container = job.spec.template.spec.containers[0];
  const env = Object.fromEntries((container.env as Json[]).map((e) => [e.name, e.value]));
  const srv = mkdtempSync(join(tmpdir(), 'cuilink-job-'));
  try {
    // The Job's own script, its paths under a deploy.scratch directory and `node` recording what it was asked to run.
    const script = `node() { echo "$*" >> "${srv}/calls"; }\n${(container.args[0] as string).replaceAll('/srv/cuilink', srv)}`;
    const runJob = async () => {
      rmSync(join(srv, 'calls'), { force: true });
      const result = await run('/bin/sh', ['-c', script], { env: { ...process.env, ...env } });
      const lines = readFileSync(join(srv, 'calls'), 'utf8').trim().split('\n');
      return { status: result.code, calls: lines.map((l) => l.split(' ').slice(1, 3).join(' ')), lines };
    };
    const first = await runJob();
    assert.equal(first.status, 0);
    assert.deepEqual(first.calls, ['index build', 'index info', 'index activate']);
    // A retry runs in a new pod, another host: only --sole-builder lets it remove the killed pod's
    // staging directory, and only a Job that never runs two pods at once may pass it.
    assert.match(first.lines[0]!, / --sole-builder( |$)/, 'the Job builds as the sole builder');
    assert.equal(job.spec.parallelism, 1, 'one pod at a time');
    assert.equal(job.spec.completions, 1);
    assert.equal(job.spec.podReplacementPolicy, 'Failed', 'a retry pod only once the previous one has terminated (not while it is still terminating)');
    mkdirSync(join(srv, 'indexes', env.INDEX_VERSION), { recursive: true });
    writeFileSync(join(srv, 'indexes', env.INDEX_VERSION, 'manifest.json'), '{}');
    const again = await runJob();
    assert.equal(again.status, 0);
    assert.deepEqual(again.calls, ['index info']);
  } finally {
    rmSync(srv, { recursive: true, force: true });
  }
});
