import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { byKind, container, K8S_VERSIONS, OVERLAYS, RenderedOverlays, WORKLOAD_KINDS, type Json } from '../support/deploy-render.ts';
import { installOrSkip, kustomize, pythonTools, run } from '../support/deploy-tools.ts';

// The NetworkPolicies of deploy/k8s, by the pod labels they select: the overlays' ingress
// isolation and the opt-in restrict-egress component.

const deploy = new RenderedOverlays();
before(() => deploy.start());
after(() => deploy.stop());

/** Whether a Kubernetes label selector (matchLabels and matchExpressions) selects `labels`. */
function selects(selector: Json, labels: Record<string, string>): boolean {
  const byLabel = Object.entries((selector.matchLabels ?? {}) as Record<string, string>).every(([k, v]) => labels[k] === v);
  const byExpression = ((selector.matchExpressions ?? []) as Json[]).every((e) => {
    const value = labels[e.key as string];
    if (e.operator === 'In') return value !== undefined && (e.values as string[]).includes(value);
    if (e.operator === 'NotIn') return value === undefined || !(e.values as string[]).includes(value);
    if (e.operator === 'Exists') return value !== undefined;
    if (e.operator === 'DoesNotExist') return value === undefined;
    return assert.fail(`selector operator ${e.operator} is not modelled`);
  });
  return byLabel && byExpression;
}

/** The pod labels the Prometheus Operator gives a Prometheus named k8s (kube-prometheus's). */
const OPERATOR_PROMETHEUS_POD = { 'app.kubernetes.io/name': 'prometheus', 'app.kubernetes.io/managed-by': 'prometheus-operator', 'app.kubernetes.io/instance': 'k8s', prometheus: 'k8s', 'operator.prometheus.io/name': 'k8s', 'operator.prometheus.io/shard': '0' };

test('NetworkPolicies deny ingress to every cuilink pod but Prometheus scraping the metrics port, in both overlays; egress is left open', (t) => {
  if (deploy.setupSkip) return t.skip(deploy.setupSkip);
  for (const overlay of OVERLAYS) {
    const docs = deploy.docs(overlay);
    const workloads = docs.filter((d) => WORKLOAD_KINDS.has(d.kind));
    const selected = (policy: Json) => workloads.filter((w) => selects(policy.spec.podSelector, w.spec.template.metadata.labels)).map((w) => w.metadata.name as string).sort();
    const deny = byKind(docs, 'NetworkPolicy', 'cuilink-default-deny-ingress');
    assert.deepEqual(deny.spec.policyTypes, ['Ingress']);
    assert.equal(deny.spec.ingress, undefined, `${overlay}: the default policy allows nothing`);
    assert.deepEqual(selected(deny), workloads.map((w) => w.metadata.name as string).sort(), `${overlay}: every cuilink pod is isolated`);
    assert.ok(!selects(deny.spec.podSelector, {}) && !selects(deny.spec.podSelector, OPERATOR_PROMETHEUS_POD), `${overlay}: other pods of the namespace are not selected`);

    // Exactly the pods the ServiceMonitor scrapes, on the container port its endpoint reaches.
    const monitor = byKind(docs, 'ServiceMonitor', 'cuilink');
    const scrape = byKind(docs, 'NetworkPolicy', 'cuilink-allow-metrics-scrape');
    const scraped = docs.filter((d) => d.kind === 'Service').map((service) => {
      const workload = workloads.find((w) => selects({ matchLabels: service.spec.selector }, w.spec.template.metadata.labels))!;
      const servicePort = (service.spec.ports as Json[]).find((p) => p.name === monitor.spec.endpoints[0].port)!;
      const containerPort = (container(workload).ports as Json[]).find((p) => p.name === servicePort.targetPort || p.containerPort === servicePort.targetPort)!;
      return { workload, containerPort };
    });
    assert.deepEqual(selected(scrape), scraped.map((s) => s.workload.metadata.name as string).sort(), `${overlay}: the scrape policy selects the linker and evaluator pods`);
    assert.deepEqual(scrape.spec.policyTypes, ['Ingress']);
    assert.equal(scrape.spec.ingress.length, 1);
    const [rule] = scrape.spec.ingress as Json[];
    for (const { workload, containerPort } of scraped) {
      assert.ok((rule!.ports as Json[]).some((p) => (p.protocol ?? 'TCP') === 'TCP' && (p.port === containerPort.name || p.port === containerPort.containerPort)), `${overlay}: ${workload.metadata.name}'s metrics port ${containerPort.containerPort} is open to the scraper`);
    }
    assert.equal(rule!.from.length, 1);
    const [peer] = rule!.from as Json[];
    assert.ok(selects(peer!.namespaceSelector, { 'kubernetes.io/metadata.name': 'monitoring' }), `${overlay}: from the monitoring namespace`);
    assert.ok(!selects(peer!.namespaceSelector, { 'kubernetes.io/metadata.name': 'cuilink' }), `${overlay}: not from every namespace`);
    assert.ok(selects(peer!.podSelector, OPERATOR_PROMETHEUS_POD), `${overlay}: the Prometheus Operator's Prometheus pods`);
    assert.ok(!selects(peer!.podSelector, {}), `${overlay}: not every pod of the monitoring namespace`);

    // Every rule names its sources (a rule without `from` admits everyone), and no policy of the
    // overlays restricts egress: that is components/restrict-egress, opt-in.
    for (const policy of docs.filter((d) => d.kind === 'NetworkPolicy')) {
      for (const r of policy.spec.ingress ?? []) assert.ok(r.from?.length, `${overlay}: ${policy.metadata.name} admits any source`);
      assert.ok(!policy.spec.policyTypes.includes('Egress'), `${overlay}: ${policy.metadata.name} restricts egress by default`);
    }
  }
});

test('the opt-in restrict-egress component allows DNS, the brokers and the collector of cuilink-env, selects every cuilink pod, and validates', async (t) => {
  if (deploy.setupSkip) return t.skip(deploy.setupSkip);
  const { tool, skip } = await installOrSkip(pythonTools);
  if (skip) return t.skip(skip);
  const overlay = join(deploy.scratch, 'restrict-egress');
  mkdirSync(overlay);
  // An operator's overlay on top of cpu, as deploy/README.md shows it: a component's resources get
  // no namespace from the overlay below, so it names the namespace again. kustomize takes no
  // absolute path to another kustomization.
  const from = (dir: string) => relative(overlay, join(process.cwd(), dir));
  writeFileSync(join(overlay, 'kustomization.yaml'), `namespace: cuilink\nresources:\n  - ${from('deploy/k8s/overlays/cpu')}\ncomponents:\n  - ${from('deploy/k8s/components/restrict-egress')}\n`);
  const renderer = await kustomize();
  const file = join(deploy.scratch, 'restrict-egress.yaml');
  writeFileSync(file, await renderer(overlay));
  const json = await run(deploy.lint!, ['yaml', file]);
  assert.equal(json.code, 0, json.stderr);
  const docs = JSON.parse(json.stdout) as Json[];
  const result = await run(tool!.kubernetesValidate, ['--strict', ...K8S_VERSIONS.flatMap((v) => ['-k', v]), file]);
  assert.equal(result.code, 0, result.stdout + result.stderr);

  const policy = byKind(docs, 'NetworkPolicy', 'cuilink-restrict-egress');
  assert.equal(policy.metadata.namespace, byKind(docs, 'StatefulSet', 'cuilink').metadata.namespace, 'the policy is in the pods\' namespace');
  assert.deepEqual(policy.spec.policyTypes, ['Egress']);
  const workloads = docs.filter((d) => WORKLOAD_KINDS.has(d.kind));
  assert.deepEqual(workloads.filter((w) => !selects(policy.spec.podSelector, w.spec.template.metadata.labels)).map((w) => w.metadata.name), [], 'every cuilink pod is restricted');
  assert.ok(!selects(policy.spec.podSelector, {}));
  const rules = policy.spec.egress as Json[];
  const allows = (port: number, protocol: string, namespace: string) =>
    rules.some((r) => (r.ports as Json[]).some((p) => p.port === port && (p.protocol ?? 'TCP') === protocol) && (r.to === undefined || (r.to as Json[]).some((peer) => peer.namespaceSelector && selects(peer.namespaceSelector, { 'kubernetes.io/metadata.name': namespace }))));
  for (const protocol of ['UDP', 'TCP']) assert.ok(allows(53, protocol, 'kube-system'), `DNS over ${protocol}`);
  // host.<namespace>.svc:port, as the base's cuilink-env names the broker and the collector.
  const env: Record<string, string> = docs.find((d) => d.kind === 'ConfigMap' && d.data?.CUILINK_BROKERS)!.data;
  for (const address of [...env.CUILINK_BROKERS!.split(','), new URL(env.CUILINK_OTLP_ENDPOINT!).host]) {
    const [, namespace, port] = address.match(/^[^.]+\.([^.]+)\.svc(?:\.[^:]*)?:(\d+)$/)!;
    assert.ok(allows(Number(port), 'TCP', namespace!), `${address} is reachable`);
    assert.ok(!allows(Number(port), 'TCP', 'somewhere-else'), `${address}: only in its namespace`);
  }
});
