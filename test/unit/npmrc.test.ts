import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

// Issue #28: npm prints `Unknown project config "<key>"` on every command for a .npmrc key that it
// does not define itself (`onnxruntime-node-install=skip` was one, read by onnxruntime-node's
// install script as npm_config_onnxruntime_node_install). Settings meant for a dependency's
// install script go in the environment where installs run (.ci/run, the Dockerfiles, README).

/** The keys of an .npmrc (ini: `key=value`, `;`/`#` comments). */
function npmrcKeys(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#') && !line.startsWith(';'))
    .map((line) => line.split('=')[0]!.trim());
}

/** Keys npm accepts besides its definitions: per-registry (`//host/:_authToken`) and per-scope (`@scope:registry`) settings. */
const scoped = (key: string) => key.startsWith('//') || /^@[^:]+:registry$/.test(key);

/** Environment without the npm_config_* variables a parent npm passes down (each would be checked as an env config). */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
}

/** npm's own config definitions, from the npm on PATH; undefined when its layout is not the known one. */
function npmDefinitions(): Set<string> | undefined {
  const root = spawnSync('npm', ['root', '-g'], { encoding: 'utf8', env: cleanEnv() }).stdout?.trim();
  const file = root && join(root, 'npm', 'node_modules', '@npmcli', 'config', 'lib', 'definitions', 'index.js');
  if (!file || !existsSync(file)) return undefined;
  const { definitions } = createRequire(import.meta.url)(file) as { definitions: Record<string, unknown> };
  return new Set(Object.keys(definitions));
}

test('every key of the project .npmrc is one npm defines', (t) => {
  const keys = npmrcKeys(readFileSync('.npmrc', 'utf8'));
  assert.ok(keys.length > 0);
  assert.ok(!keys.includes('onnxruntime-node-install'), 'onnxruntime-node-install is not an npm config: set ONNXRUNTIME_NODE_INSTALL=skip where installs run');
  const known = npmDefinitions();
  if (!known) return t.skip('npm config definitions not found next to the npm on PATH');
  assert.ok(known.has('fund') && known.has('audit') && !known.has('onnxruntime-node-install'), 'the definitions are npm\'s');
  for (const key of keys) assert.ok(scoped(key) || known.has(key), `.npmrc: "${key}" is not an npm config (npm warns about it on every command)`);
});

test('npm in this project prints no unknown-config warning', () => {
  const result = spawnSync('npm', ['config', 'list'], { encoding: 'utf8', env: cleanEnv() });
  assert.equal(result.status, 0, result.stderr);
  assert.doesNotMatch(result.stderr, /Unknown project config/);
  assert.match(result.stdout, /"project" config from .*\.npmrc/, 'the project .npmrc was read');
});

test('every install that runs install scripts skips onnxruntime-node\'s NuGet download', () => {
  // .ci/run: exported before its install.
  const ci = readFileSync('.ci/run', 'utf8');
  const exported = ci.search(/^export ONNXRUNTIME_NODE_INSTALL=skip$/m);
  assert.ok(exported >= 0 && exported < ci.search(/^npm ci\b/m), '.ci/run exports ONNXRUNTIME_NODE_INSTALL=skip before npm ci');
  // The Dockerfiles: in every stage that runs npm ci with install scripts, the ENV comes first.
  for (const file of ['deploy/docker/Dockerfile', 'deploy/docker/Dockerfile.cuda']) {
    const text = readFileSync(file, 'utf8').replace(/\\\n/g, ' ');
    for (const stage of text.split(/^FROM /m).slice(1)) {
      const install = stage.search(/^RUN npm (ci|install)\b(?![^\n]*--ignore-scripts)/m);
      if (install < 0) continue;
      const env = stage.search(/^ENV [^\n]*\bONNXRUNTIME_NODE_INSTALL=skip\b/m);
      assert.ok(env >= 0 && env < install, `${file}, stage ${stage.split('\n')[0]}: ENV ONNXRUNTIME_NODE_INSTALL=skip before npm ci`);
    }
  }
  // README: every install command line it shows.
  const readme = readFileSync('README.md', 'utf8');
  const lines = readme.split('\n').filter((line) => /^\s*(\S+=\S+ )*npm (ci|install)\b/.test(line));
  assert.ok(lines.length > 0);
  for (const line of lines) assert.match(line, /\bONNXRUNTIME_NODE_INSTALL=skip npm (ci|install)\b/, `README: ${line}`);
});
