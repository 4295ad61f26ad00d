import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { byKind, K8S_VERSIONS, OVERLAYS, RenderedOverlays, type Json } from '../support/deploy-render.ts';
import { crdModels, installOrSkip, pythonTools, run } from '../support/deploy-tools.ts';

// deploy/k8s and deploy/docker checked as far as a machine without a cluster or a Docker engine
// can: kustomize renders, the Kubernetes schemas (strict) and the CRD schemas validate, the
// PrometheusRule is deploy/prometheus's, hadolint lints and the images ship no build tools. How
// the workloads fit the stage's config and each other: deploy-workloads.test.ts; the network
// policies: deploy-network-policies.test.ts.

const deploy = new RenderedOverlays();
before(() => deploy.start());
after(() => deploy.stop());

test('every rendered core manifest validates against the Kubernetes schemas in strict mode', async (t) => {
  if (deploy.setupSkip) return t.skip(deploy.setupSkip);
  const { tool, skip } = await installOrSkip(pythonTools);
  if (skip) return t.skip(skip);
  for (const overlay of OVERLAYS) {
    const args = ['--strict', ...K8S_VERSIONS.flatMap((v) => ['-k', v]), deploy.yaml(overlay)];
    const result = await run(tool!.kubernetesValidate, args);
    assert.equal(result.code, 0, `${overlay}: ${result.stdout}${result.stderr}`);
    const passed = (result.stdout + result.stderr).match(/passed for resource/g)?.length ?? 0;
    const core = deploy.docs(overlay).filter((d) => !/(^|\.)(keda\.sh|coreos\.com)\//.test(d.apiVersion)).length;
    assert.equal(passed, core * K8S_VERSIONS.length, `${overlay}: every core resource checked for every version`);
  }
  // The validator is live: a misspelt field in the same render is refused.
  const broken = join(deploy.scratch, 'broken.yaml');
  writeFileSync(broken, readFileSync(deploy.yaml('cpu'), 'utf8').replace('readinessProbe:', 'readinessProb:'));
  const refused = await run(tool!.kubernetesValidate, ['--strict', '-k', K8S_VERSIONS[0]!, broken]);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stdout + refused.stderr, /readinessProb/);
});

test('KEDA and Prometheus Operator resources validate against their CRD schemas', async (t) => {
  if (deploy.setupSkip) return t.skip(deploy.setupSkip);
  const { tool: modules, skip } = await installOrSkip(crdModels);
  if (skip) return t.skip(skip);
  const load = async (path: string, name: string) => (await import(join(modules!, path)))[name] as new (data: Json) => { validate(): void };
  const models: Record<string, new (data: Json) => { validate(): void }> = {
    ScaledObject: await load('@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject.js', 'ScaledObject'),
    TriggerAuthentication: await load('@kubernetes-models/keda/keda.sh/v1alpha1/TriggerAuthentication.js', 'TriggerAuthentication'),
    ServiceMonitor: await load('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor.js', 'ServiceMonitor'),
    PrometheusRule: await load('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule.js', 'PrometheusRule'),
  };
  for (const overlay of OVERLAYS) {
    const custom = deploy.docs(overlay).filter((d) => /(^|\.)(keda\.sh|coreos\.com)\//.test(d.apiVersion));
    assert.deepEqual(custom.map((d) => d.kind).sort(), Object.keys(models).sort());
    for (const doc of custom) assert.doesNotThrow(() => new models[doc.kind]!(doc).validate(), `${overlay} ${doc.kind}`);
  }
  const wrong = structuredClone(byKind(deploy.docs('cpu'), 'ScaledObject'));
  wrong.spec.maxReplicaCount = 'six';
  assert.throws(() => new models.ScaledObject!(wrong).validate(), /maxReplicaCount/);
});

test('the PrometheusRule carries exactly the alert rules of deploy/prometheus', async (t) => {
  if (deploy.setupSkip) return t.skip(deploy.setupSkip);
  const rulesFile = await run(deploy.lint!, ['yaml', 'deploy/prometheus/cuilink-alerts.rules.yml']);
  const groups = (JSON.parse(rulesFile.stdout) as Json[])[0]!.groups;
  assert.deepEqual(byKind(deploy.docs('cpu'), 'PrometheusRule', 'cuilink').spec.groups, groups);
});

test('both Dockerfiles pass hadolint, and hadolint is live', async (t) => {
  const { tool, skip } = await installOrSkip(pythonTools);
  if (skip) return t.skip(skip);
  const config = ['--config', 'deploy/docker/.hadolint.yaml'];
  const result = await run(tool!.hadolint, [...config, 'deploy/docker/Dockerfile', 'deploy/docker/Dockerfile.cuda']);
  assert.equal(result.code, 0, result.stdout + result.stderr);
  const rootImage = join(deploy.scratch, 'root-user.Dockerfile');
  writeFileSync(rootImage, 'FROM node:20-bookworm-slim\nUSER root\nCMD ["node"]\n');
  const refused = await run(tool!.hadolint, [...config, rootImage]);
  assert.match(refused.stdout, /DL3002/, 'last USER root is reported');
});

test('the images run the checkout\'s command line as a non-root user with no build tools in the final stage', () => {
  for (const file of ['deploy/docker/Dockerfile', 'deploy/docker/Dockerfile.cuda']) {
    const text = readFileSync(file, 'utf8').replace(/\\\n/g, ' ');
    const finalStage = text.slice(text.lastIndexOf('\nFROM '));
    // Under tini, PID 1 (test/integration/deploy-init.test.ts).
    assert.match(finalStage, /^ENTRYPOINT \["tini", "--", "node", "bin\/cuilink\.js"\]$/m, file);
    assert.match(finalStage, /^CMD \["run"\]$/m, file);
    assert.match(finalStage, /^USER 1000:1000$/m, file);
    assert.match(finalStage, /^HEALTHCHECK .*\/healthz/m, file);
    assert.doesNotMatch(finalStage, /apt-get install|npm (ci|install)|g\+\+|python3/, `${file}: build tools or installs in the final stage`);
    assert.match(text, /npm ci --omit=dev/, `${file}: production dependencies only`);
    // Every path the image copies from the context must survive its .dockerignore.
    const allowed = readFileSync(`${file}.dockerignore`, 'utf8').split('\n').filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/\*\*$/, ''));
    for (const m of text.matchAll(/^COPY (?!--from)(?:--\S+ )*(.+) \S+$/gm)) {
      for (const source of m[1]!.split(' ')) {
        const path = source.replace(/^\$\{INDEX_SRC\}$/, 'deploy/docker/no-index').replace(/\/$/, '');
        assert.ok(allowed.some((a) => path === a || path.startsWith(`${a}/`)), `${file}: COPY ${path} is excluded by ${file}.dockerignore`);
      }
    }
  }
  // The images run compiled JavaScript (dist/ from `npm run build` in a build stage), so tsx, which
  // only a checkout without a build uses, is a dev dependency and no TypeScript source is shipped.
  for (const file of ['deploy/docker/Dockerfile', 'deploy/docker/Dockerfile.cuda']) {
    const text = readFileSync(file, 'utf8').replace(/\\\n/g, ' ');
    const finalStage = text.slice(text.lastIndexOf('\nFROM '));
    assert.match(text, /^RUN npm run build$/m, `${file}: a build stage compiles the TypeScript`);
    assert.match(finalStage, /^COPY --from=build (?:--\S+ )*\/app\/dist \.\/dist$/m, `${file}: the final stage copies dist/`);
    assert.doesNotMatch(finalStage, /^COPY (?!--from)(?:--\S+ )*src /m, `${file}: no TypeScript sources in the final stage`);
  }
  const packageJson = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
  assert.equal(packageJson.dependencies.tsx, undefined, 'tsx is not a production dependency');
  assert.ok(packageJson.devDependencies.tsx, 'tsx is a dev dependency (bin/cuilink.js uses it when dist/ is absent)');
});
