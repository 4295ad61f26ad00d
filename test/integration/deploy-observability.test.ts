import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { StageMetrics } from '../../src/telemetry/stage-metrics.ts';
import { SidecarEvaluator } from '../../src/eval/sidecar/sidecar-evaluator.ts';
import { EvaluatorMetrics } from '../../src/eval/sidecar/otel-metrics.ts';
import { registerMemoryUpdaterInstruments } from '../../src/eval/memory-updater-metrics.ts';
import { ENV_VARS, loadStageConfig } from '../../src/stream/stage-config.ts';
import { fixtureOntology } from '../unit/eval/fixture-ontology.ts';
import { deployLint, installOrSkip, kustomize, promtool, run } from '../support/deploy-tools.ts';

// deploy/compose, the alert rules and the Grafana dashboard: parsed by the loaders their real
// consumers use, and every metric they query checked against what cuilink's code exports.

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const DASHBOARD = 'deploy/compose/grafana/dashboards/cuilink.json';
const RULES = 'deploy/prometheus/cuilink-alerts.rules.yml';
/** Series that come from outside cuilink: Prometheus itself and kafka-exporter. */
const EXTERNAL_METRICS = new Set(['up', 'kafka_consumergroup_lag']);
let lint: string | undefined;
let skip: string | undefined;
let exported: Set<string>;
/** Families each command of the cuilink image exports on its /metrics, by the command's words ('run' is the stage). */
let exportedBy: Map<string, string[]>;

/** Metric family names from Prometheus text; histograms also expose _bucket, _sum and _count. */
function familiesOf(text: string): string[] {
  return [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap(([, name, type]) => (type === 'histogram' ? [name!, `${name}_bucket`, `${name}_sum`, `${name}_count`] : [name!]));
}

async function stageFamilies(): Promise<string[]> {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ readers: [exporter] });
  const metrics = new StageMetrics(() => 0, provider.getMeter('cuilink.stream'));
  // Every instrument records once, or the exporter leaves it out.
  metrics.recordConsumed();
  metrics.recordProduced(1);
  metrics.recordDeadLettered('BAD_NOTE');
  metrics.recordRetry('produce');
  metrics.recordBatch(1);
  metrics.recordPhase('link', 0.01);
  metrics.recordEndToEnd(0.01);
  const server = createServer((req, res) => exporter.getMetricsRequestHandler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const text = await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`)).text();
    return familiesOf(text);
  } finally {
    server.close();
    await provider.shutdown();
  }
}

async function evaluatorFamilies(): Promise<string[]> {
  const evaluator = new SidecarEvaluator(fixtureOntology, { joiner: { ttlMs: 60_000, maxPending: 10 }, windows: { lastN: 10, lastMs: 60_000 }, alerts: { floor: 0.7, minSamples: 1 } }, () => {}, undefined, 0);
  // One joined sample, so that every per-window series exists (an empty window has no acc@1 yet).
  evaluator.addGold({ noteId: 'n1', mentionId: '0-3', ids: ['FIX:A'], label: 'Disease', start: 0, end: 3 }, 0);
  evaluator.addLinkedNote({ noteId: 'n1', mentions: [{ mentionId: '0-3', start: 0, end: 3, label: 'Disease', conceptId: 'FIX:A', conceptName: 'A', semanticTypes: [], score: 0.9, confidence: 0.9, via: 'dense', nil: false, reranked: false, candidates: [{ conceptId: 'FIX:A', name: 'A', semanticTypes: [], score: 0.9, retrievalScore: 0.9, exact: false, via: 'dense' }] }], linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 0 }, 0);
  const metrics = new EvaluatorMetrics(() => evaluator.report(0));
  try {
    return familiesOf(await metrics.text());
  } finally {
    await metrics.shutdown();
  }
}

async function memoryUpdaterFamilies(): Promise<string[]> {
  const exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
  const provider = new MeterProvider({ readers: [exporter] });
  registerMemoryUpdaterInstruments(() => ({ learned: 1, measureSkipped: 0, duplicates: 0, waiting: 0, goldDropped: 0, erasedSkipped: 0, nilSkipped: 0, snapshots: 1, snapshotsFailed: 0, pending: 0, lastSnapshotAt: 0, version: '000001-x' }), provider.getMeter('cuilink.memory_updater'));
  try {
    const { resourceMetrics } = await exporter.collect();
    return familiesOf(new PrometheusSerializer(undefined, false, undefined, false, true).serialize(resourceMetrics));
  } finally {
    await provider.shutdown();
  }
}

/** Metric names in a PromQL expression: what is left once labels, ranges, strings, grouping clauses, functions and operators are removed. */
function metricsIn(expr: string): string[] {
  const bare = expr
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/"[^"]*"/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  const operators = new Set(['sum', 'min', 'max', 'avg', 'count', 'group', 'stddev', 'stdvar', 'topk', 'bottomk', 'quantile', 'count_values', 'and', 'or', 'unless', 'bool', 'offset']);
  return [...bare.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)].map((m) => m[1]!).filter((name) => !operators.has(name));
}

before(async () => {
  exportedBy = new Map([
    ['run', await stageFamilies()],
    ['evaluator', await evaluatorFamilies()],
    ['memory updater', await memoryUpdaterFamilies()],
  ]);
  exported = new Set([...exportedBy.values()].flat());
  const tool = await installOrSkip(deployLint);
  skip = tool.skip;
  lint = tool.tool;
});

test('compose.yaml loads with compose-go (docker compose config) and wires the stack together', async (t) => {
  if (skip) return t.skip(skip);
  const result = await run(lint!, ['compose', 'deploy/compose/compose.yaml']);
  assert.equal(result.code, 0, result.stderr);
  const project = JSON.parse(result.stdout) as Json;
  const services = project.services as Record<string, Json>;
  for (const name of ['kafka', 'kafka-topics', 'cuilink', 'evaluator', 'memory-updater', 'sample-notes', 'otel-collector', 'jaeger', 'prometheus', 'grafana']) assert.ok(services[name], `service ${name}`);
  assert.equal(services.kafka!.environment.KAFKA_PROCESS_ROLES, 'broker,controller', 'Kafka runs in KRaft mode');

  const config = loadStageConfig({ file: 'deploy/compose/stage.json', env: services.cuilink!.environment });
  const topicsScript = (services['kafka-topics']!.command as string[]).join(' ');
  for (const topic of [config.topics.input, config.topics.output, config.topics.deadLetter]) assert.match(topicsScript, new RegExp(`${topic.replace(/\./g, '\\.')}:\\d+`), `topic ${topic} is created`);
  assert.equal(services.cuilink!.read_only, true);
  assert.ok(services.cuilink!.tmpfs.some((p: string) => p.startsWith('/tmp')));
  assert.equal(services.cuilink!.depends_on['kafka-topics'].condition, 'service_completed_successfully');
  for (const service of ['cuilink', 'evaluator', 'sample-notes', 'memory-updater']) {
    for (const name of Object.keys(services[service]!.environment ?? {})) assert.ok(ENV_VARS.some(([n]) => n === name), `${service}: ${name} is read by nobody`);
  }
  assert.ok(Number(services.cuilink!.stop_grace_period.replace(/s$/, '')) * 1000 > config.drainTimeoutMs, 'stop grace period outlasts the drain');
  // A stable Kafka identity per instance (issue #27): set explicitly, not left to a default, so a
  // restarted stage in exactly-once mode takes the same transactional id and fences the old one.
  const eos = loadStageConfig({ file: 'deploy/compose/stage.json', env: { ...services.cuilink!.environment, CUILINK_DELIVERY: 'exactly-once' } });
  assert.ok(services.cuilink!.environment.CUILINK_CLIENT_ID, 'the linker has an explicit client id');
  assert.equal(eos.transactionalId, `${eos.groupId}-${eos.clientId}`, 'the linker has an explicit transactional id, <groupId>-<clientId>');
  assert.ok((services.cuilink!.deploy?.replicas ?? 1) === 1 && !services.cuilink!.scale, 'one instance per transactional id');

  const prometheus = readFileSync('deploy/compose/prometheus/prometheus.yml', 'utf8');
  assert.match(prometheus, new RegExp(`cuilink:${config.http.port}`));
  const evaluatorArgs = services.evaluator!.command as string[];
  assert.equal(evaluatorArgs[0], 'evaluator');
  assert.match(prometheus, new RegExp(`evaluator:${evaluatorArgs[evaluatorArgs.indexOf('--port') + 1]}`));
  assert.equal(evaluatorArgs[evaluatorArgs.indexOf('--index') + 1], services.cuilink!.environment.CUILINK_INDEX_DIR ?? '/opt/cuilink/indexes/default', 'the evaluator judges against the index the linker serves');
  assert.match((services['sample-notes']!.command as string[]).join(' '), new RegExp(`gold-sample [^]*--notes-topic ${config.topics.input.replace(/\./g, '\\.')}`));
  // The memory: the updater writes it, the linker serves it read-only, the evaluator scores the notes it does not learn.
  const updaterArgs = services['memory-updater']!.command as string[];
  assert.deepEqual(updaterArgs.slice(0, 2), ['memory', 'updater']);
  const memoryRoot = updaterArgs[updaterArgs.indexOf('--memory') + 1];
  assert.equal(services.cuilink!.environment.CUILINK_MEMORY, memoryRoot);
  const mountOf = (service: string) => (services[service]!.volumes as Json[]).find((v) => v.target === memoryRoot);
  assert.equal(mountOf('cuilink')?.read_only, true, 'the linker reads the memory');
  assert.ok(mountOf('memory-updater') && !mountOf('memory-updater')!.read_only, 'the updater writes it');
  assert.equal(mountOf('cuilink')!.source, mountOf('memory-updater')!.source, 'one volume');
  assert.equal(evaluatorArgs[evaluatorArgs.indexOf('--learn-fraction') + 1], updaterArgs[updaterArgs.indexOf('--learn-fraction') + 1]);
  assert.match(updaterArgs.join(' '), new RegExp(`--notes-topic ${config.topics.input.replace(/\./g, '\\.')}`));
  const collector = (JSON.parse((await run(lint!, ['yaml', 'deploy/compose/otel/collector.yaml'])).stdout) as Json[])[0]!;
  assert.equal(collector.receivers.otlp.protocols.http.endpoint, '0.0.0.0:4318');
  for (const [name, pipeline] of Object.entries(collector.service.pipelines as Record<string, Json>)) {
    for (const kind of ['receivers', 'processors', 'exporters']) {
      for (const component of pipeline[kind] ?? []) assert.ok(collector[kind][component], `collector pipeline ${name}: ${kind} ${component} is not defined`);
    }
  }
  assert.match(collector.exporters['otlp/jaeger'].endpoint, /^jaeger:4317$/);
  assert.ok(services.jaeger, 'traces go to the Jaeger service');
  assert.match(services.cuilink!.environment.CUILINK_OTLP_ENDPOINT, /^http:\/\/otel-collector:4318$/);
});

test('a compose service of the cuilink image that serves no /healthz on CUILINK_HTTP_PORT has a healthcheck of its own or none', async (t) => {
  if (skip) return t.skip(skip);
  // The image's HEALTHCHECK asks /healthz on CUILINK_HTTP_PORT (8080), which only the stage (`run`)
  // serves. A service running another command inherits it unless compose overrides it, and then
  // turns unhealthy once the start period is over: `docker compose ps` shows it so, and
  // `docker compose up --wait` (what CI runs) fails on it.
  const dockerfile = readFileSync('deploy/docker/Dockerfile', 'utf8').replace(/\\\n/g, ' ');
  assert.match(dockerfile.slice(dockerfile.lastIndexOf('\nFROM ')), /^HEALTHCHECK .*CUILINK_HTTP_PORT.*\/healthz/m);
  const result = await run(lint!, ['compose', 'deploy/compose/compose.yaml']);
  assert.equal(result.code, 0, result.stderr);
  const services = Object.entries((JSON.parse(result.stdout) as Json).services as Record<string, Json>).filter(([, s]) => s.build?.dockerfile === 'deploy/docker/Dockerfile');
  assert.deepEqual(services.map(([name]) => name).sort(), ['cuilink', 'evaluator', 'memory-updater', 'sample-notes']);
  for (const [name, service] of services) {
    const command: string[] = [...(service.entrypoint ?? []), ...(service.command ?? ['run'])];
    if (service.entrypoint == null && command[0] === 'run') continue;
    const own = service.healthcheck as Json | undefined;
    assert.ok(own, `${name} runs \`${command.slice(0, 2).join(' ')}\`, which serves no /healthz on CUILINK_HTTP_PORT, yet inherits the image's HEALTHCHECK: it turns unhealthy (give it a healthcheck of its own, or \`disable: true\`)`);
    if (own.disable === true) continue;
    const port = command[command.indexOf('--port') + 1];
    assert.ok(command.includes('--port') && (own.test as string[]).join(' ').includes(`:${port}/healthz`), `${name}: its healthcheck asks /healthz on the port it serves (--port ${port})`);
  }
});

test('every alert can fire in compose: a service serving HTTP is scraped and health-checked on its port, and each metric the rules query comes from a scraped service', async (t) => {
  if (skip) return t.skip(skip);
  const result = await run(lint!, ['compose', 'deploy/compose/compose.yaml']);
  assert.equal(result.code, 0, result.stderr);
  const services = (JSON.parse(result.stdout) as Json).services as Record<string, Json>;
  const prometheus = (JSON.parse((await run(lint!, ['yaml', 'deploy/compose/prometheus/prometheus.yml'])).stdout) as Json[])[0]!;
  const targets = new Set((prometheus.scrape_configs as Json[]).flatMap((job) => (job.static_configs as Json[]).flatMap((c) => c.targets as string[])));
  // Prometheus writes `up` for every target itself; kafka-exporter serves on its default port.
  const scraped = new Set(['up', ...(targets.has('kafka-exporter:9308') ? ['kafka_consumergroup_lag'] : [])]);
  for (const [name, service] of Object.entries(services).filter(([, s]) => s.build?.dockerfile === 'deploy/docker/Dockerfile' && s.entrypoint == null)) {
    const command: string[] = service.command ?? ['run'];
    const words = command[0] === 'run' ? 'run' : command.slice(0, command[0] === 'memory' ? 2 : 1).join(' ');
    // The stage serves on CUILINK_HTTP_PORT under the image's HEALTHCHECK; every other command only with --port.
    const port = words === 'run' ? String(loadStageConfig({ file: 'deploy/compose/stage.json', env: service.environment }).http.port) : command.includes('--port') ? command[command.indexOf('--port') + 1] : undefined;
    const families = exportedBy.get(words);
    if (port === undefined || !families) {
      assert.ok(port === undefined, `${name}: what \`${words}\` exports on --port ${port} is unknown to this test`);
      continue;
    }
    assert.ok(targets.has(`${name}:${port}`), `${name} serves /metrics on ${port}, which the compose Prometheus does not scrape`);
    assert.notEqual(service.healthcheck?.disable, true, `${name} serves /healthz on ${port} yet its healthcheck is disabled`);
    if (words !== 'run') assert.match((service.healthcheck?.test ?? []).join(' '), new RegExp(`:${port}/healthz`), `${name}: a healthcheck on /healthz of --port ${port}`);
    for (const family of families) scraped.add(family);
  }
  const rules = (JSON.parse((await run(lint!, ['yaml', RULES])).stdout) as Json[])[0]!.groups.flatMap((g: Json) => g.rules) as Json[];
  for (const rule of rules) {
    for (const metric of metricsIn(rule.expr)) assert.ok(scraped.has(metric), `${rule.alert} can never fire in compose: ${metric} comes from no service the compose Prometheus scrapes`);
  }
  const published = Object.values(services).flatMap((s) => ((s.ports ?? []) as Json[]).map((p) => `${p.published}/${p.protocol}`));
  assert.equal(new Set(published).size, published.length, `each host port is published once: ${published.join(', ')}`);
});

test('compose-go refuses a broken compose file (the check is live)', async (t) => {
  if (skip) return t.skip(skip);
  const broken = readFileSync('deploy/compose/compose.yaml', 'utf8').replace('    stop_grace_period: 45s', '    stop_grace_period: [45]');
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-compose-'));
  cpSync('deploy/compose', dir, { recursive: true });
  writeFileSync(join(dir, 'compose.yaml'), broken);
  const result = await run(lint!, ['compose', join(dir, 'compose.yaml')]);
  rmSync(dir, { recursive: true, force: true });
  assert.notEqual(result.code, 0);
  assert.match(result.stderr, /stop_grace_period/);
});

test('the alert rules parse with Prometheus\'s rulefmt and PromQL parser, over metrics cuilink exports', async (t) => {
  if (skip) return t.skip(skip);
  const result = await run(lint!, ['rules', RULES]);
  assert.equal(result.code, 0, result.stderr);
  const parsed = await run(lint!, ['yaml', RULES]);
  const rules = (JSON.parse(parsed.stdout) as Json[])[0]!.groups.flatMap((g: Json) => g.rules) as Json[];
  assert.equal(JSON.parse(result.stdout).rules, rules.length);
  const names = rules.map((r) => r.alert as string);
  for (const needed of ['CuilinkConsumerLagGrowing', 'CuilinkDeadLetters', 'CuilinkAccuracyDrop']) assert.ok(names.includes(needed), needed);
  for (const rule of rules) {
    for (const metric of metricsIn(rule.expr)) assert.ok(exported.has(metric) || EXTERNAL_METRICS.has(metric), `${rule.alert}: ${metric} is exported by nothing`);
  }
  const bad = await run(lint!, ['rules', 'deploy/compose/stage.json']);
  assert.notEqual(bad.code, 0, 'a file that is not a rule file is refused');
});

test('promtool accepts the compose Prometheus config with the rules mounted, and the rules pass their unit tests', async (t) => {
  const { tool, skip: cannot } = await installOrSkip(promtool);
  if (cannot) return t.skip(cannot);
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-promtool-'));
  try {
    // The rules directory as compose mounts it (/etc/prometheus/rules), here.
    mkdirSync(join(dir, 'rules'));
    cpSync(RULES, join(dir, 'rules', 'cuilink-alerts.rules.yml'));
    writeFileSync(join(dir, 'prometheus.yml'), readFileSync('deploy/compose/prometheus/prometheus.yml', 'utf8').replace('/etc/prometheus/rules/', `${join(dir, 'rules')}/`));
    const config = await run(tool!, ['check', 'config', join(dir, 'prometheus.yml')]);
    assert.equal(config.code, 0, config.stdout + config.stderr);
    assert.match(config.stdout + config.stderr, /1 rule files found/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // Each alert fires on the situation it is for and stays quiet on the healthy one beside it.
  const unit = await run(tool!, ['test', 'rules', 'cuilink-alerts.test.yml'], { cwd: 'deploy/prometheus' });
  assert.equal(unit.code, 0, unit.stdout + unit.stderr);
  assert.match(unit.stdout, /SUCCESS/);
});

/** Seconds in a Prometheus duration ('7m', '1h30m', '90s'). */
function durationSeconds(duration: string): number {
  const units: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
  const parts = [...duration.matchAll(/(\d+)([smhd])/g)];
  assert.equal(parts.map((p) => p[0]).join(''), duration, `${duration}: a duration this test reads`);
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * units[unit!]!, 0);
}

/** Besides the startup probe's window, before the container starts: the image pull (the pod is a target already, refusing). */
const PULL_MARGIN_S = 120;

test('CuilinkDown waits out the linker\'s startup window in each overlay, and the gpu overlay\'s rules pass their unit tests', async (t) => {
  const [renderer, tools] = await Promise.all([installOrSkip(kustomize), installOrSkip(promtool)]);
  const cannot = skip ?? renderer.skip ?? tools.skip;
  if (cannot) return t.skip(cannot);
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-overlay-rules-'));
  try {
    for (const overlay of ['cpu', 'gpu']) {
      const file = join(dir, `${overlay}.yaml`);
      writeFileSync(file, await renderer.tool!(`deploy/k8s/overlays/${overlay}`));
      const docs = JSON.parse((await run(lint!, ['yaml', file])).stdout) as Json[];
      const linker = docs.find((d) => d.kind === 'StatefulSet' && d.metadata.name === 'cuilink')!.spec.template.spec.containers[0];
      const probe = linker.startupProbe as Json;
      const window = (probe.initialDelaySeconds ?? 0) + (probe.periodSeconds ?? 10) * (probe.failureThreshold ?? 3);
      const groups = docs.find((d) => d.kind === 'PrometheusRule')!.spec.groups as Json[];
      const down = groups.flatMap((g) => g.rules as Json[]).find((r) => r.alert === 'CuilinkDown')!;
      // The pod is scraped from the moment it has an address (Prometheus keeps not-ready endpoints),
      // and a linker does not answer while it loads (the index is read synchronously).
      assert.ok(durationSeconds(down.for) >= window + PULL_MARGIN_S, `${overlay}: CuilinkDown fires after ${down.for}, within the linker's ${window} s startup window plus ${PULL_MARGIN_S} s for the image pull`);
      if (overlay === 'gpu') writeFileSync(join(dir, 'cuilink-alerts.gpu.rules.yml'), JSON.stringify({ groups }));
    }
    cpSync('deploy/prometheus/cuilink-alerts.gpu.test.yml', join(dir, 'cuilink-alerts.gpu.test.yml'));
    const unit = await run(tools.tool!, ['test', 'rules', 'cuilink-alerts.gpu.test.yml'], { cwd: dir });
    assert.equal(unit.code, 0, unit.stdout + unit.stderr);
    assert.match(unit.stdout, /SUCCESS/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the Grafana dashboard has the panels operators need, over exported metrics and the provisioned datasource', () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Json;
  const provisioned = readFileSync('deploy/compose/grafana/provisioning/datasources/prometheus.yaml', 'utf8');
  const uid = provisioned.match(/uid: (\S+)\n\s+type: prometheus/)![1];
  const panels = dashboard.panels as Json[];
  assert.equal(new Set(panels.map((p) => p.id)).size, panels.length, 'panel ids are unique');
  const exprs: string[] = [];
  for (const panel of panels) {
    assert.equal(panel.datasource.uid, uid, `${panel.title}: datasource`);
    assert.ok(panel.gridPos.w > 0 && panel.gridPos.h > 0 && panel.gridPos.x + panel.gridPos.w <= 24, `${panel.title}: grid`);
    assert.ok(panel.targets.length > 0, `${panel.title}: queries`);
    for (const target of panel.targets) {
      assert.equal(target.datasource.uid, uid);
      exprs.push(target.expr);
      for (const metric of metricsIn(target.expr)) assert.ok(exported.has(metric) || EXTERNAL_METRICS.has(metric), `${panel.title}: ${metric} is exported by nothing`);
    }
  }
  const panelQuerying = (pattern: RegExp) => panels.find((p) => p.targets.some((t: Json) => pattern.test(t.expr)));
  const required: [string, RegExp][] = [
    ['throughput', /rate\(cuilink_stream_(consumed|produced)_total/],
    ['end-to-end lag', /cuilink_stream_end_to_end_lag_seconds_bucket/],
    ['batch size', /cuilink_stream_batch_mentions/],
    ['stage latencies', /cuilink_stream_phase_duration_seconds_bucket.*phase|by \(le, phase\)/],
    ['dead-lettered count', /cuilink_stream_dead_lettered_total/],
    ['rolling acc@1', /cuilink_eval_acc1/],
    ['rolling nDCG', /cuilink_eval_ndcg5/],
  ];
  for (const [what, pattern] of required) assert.ok(panelQuerying(pattern), `a panel shows ${what}`);
  const dashboardsProvider = readFileSync('deploy/compose/grafana/provisioning/dashboards/cuilink.yaml', 'utf8');
  assert.match(dashboardsProvider, /path: \/var\/lib\/grafana\/dashboards/);
});
