import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndexFromKb } from '../../src/link/build-index-from-kb.ts';
import { openLinker } from '../../src/link/open-linker.ts';
import { parseLinkConfig } from '../../src/link/link-config.ts';
import type { Linker } from '../../src/link/linker.ts';
import type { LinkedNote, NoteInput } from '../../src/link/types.ts';

// The real default bi-encoder (ONNX, int8 on CPU) over a real HNSW index of a fixture ontology.
const MODEL = 'models/default/biencoder';
let root: string;
let indexDir: string;
let linker: Linker;

function note(noteId: string, text: string, spans: [string, string][]): NoteInput {
  let from = 0;
  const mentions = spans.map(([surface, label], i) => {
    const start = text.indexOf(surface, from);
    assert.ok(start >= 0, `fixture: '${surface}' not in note ${noteId}`);
    from = start + surface.length;
    return { id: `m${i}`, start, end: start + surface.length, text: surface, label };
  });
  return { noteId, text, mentions };
}

const NOTES: NoteInput[] = [
  note('n1', 'History of heart attack in 2019 and poorly controlled high blood pressure.', [['heart attack', 'Disease'], ['high blood pressure', 'Disease']]),
  note('n2', 'Known chronic obstructive pulmonary disease (COPD). COPD exacerbation with lung infection.', [['chronic obstructive pulmonary disease', 'Disease'], ['COPD', 'Disease'], ['lung infection', 'Disease']]),
  note('n3', 'Newly diagnosed Breast-Cancer, left side; adult onset diabetes on metformin.', [['Breast-Cancer', 'Disease'], ['adult onset diabetes', 'Disease']]),
];

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-e2e-'));
  indexDir = join(root, 'index');
  await buildIndexFromKb({ kbPaths: ['test/fixtures/kb/clinical-mini.obo'], modelDir: MODEL, outDir: indexDir, provider: 'cpu', threads: 1, progress: false });
  linker = await openLinker({ indexDir, provider: 'cpu', threads: 1, rerankerDir: false });
});
after(async () => {
  await linker?.close();
  rmSync(root, { recursive: true, force: true });
});

const top = (linked: LinkedNote[], noteId: string, mentionId: string) => linked.find((n) => n.noteId === noteId)!.mentions.find((m) => m.mentionId === mentionId)!;

test('mentions link to the right concepts: exact synonyms, variants, and an in-note abbreviation', async () => {
  const linked = await linker.linkNotes(NOTES);
  assert.equal(top(linked, 'n1', 'm0').conceptId, 'FX:0000020');
  assert.equal(top(linked, 'n1', 'm1').conceptId, 'FX:0000030');
  assert.equal(top(linked, 'n2', 'm0').conceptId, 'FX:0000040');
  const copd = top(linked, 'n2', 'm1');
  assert.equal(copd.conceptId, 'FX:0000040');
  assert.equal(copd.expandedFrom, 'COPD');
  assert.equal(top(linked, 'n2', 'm2').conceptId, 'FX:0000050');
  // Not exact strings: punctuation variant, and a dense-retrieval neighbour.
  assert.equal(top(linked, 'n3', 'm0').conceptId, 'FX:0000060');
  const diabetes = top(linked, 'n3', 'm1');
  assert.ok(diabetes.candidates.slice(0, 3).some((c) => c.conceptId === 'FX:0000011'), JSON.stringify(diabetes.candidates.map((c) => c.conceptId)));
  for (const n of linked) for (const m of n.mentions) assert.ok(m.candidates.length > 0 && m.candidates.length <= 5);
});

test('same input, same index: same output, whatever the batching', async () => {
  const together = await linker.linkNotes(NOTES);
  const alone = [];
  for (const n of NOTES) alone.push(...(await linker.linkNotes([n])));
  const ids = (out: LinkedNote[]) => out.map((n) => n.mentions.map((m) => m.conceptId));
  assert.deepEqual(ids(together), ids(alone));
  assert.deepEqual(ids(await linker.linkNotes(NOTES)), ids(together));
});

test('context-free models: a link depends on its mention alone, so the link cache answers exactly what linking again would', async () => {
  // The real int8 models scale activations per batch: only one mention per model batch makes this hold.
  const uncached = await openLinker({ indexDir, provider: 'cpu', threads: 1, config: { cache: { maxEntries: 0 } } });
  const cached = await openLinker({ indexDir, provider: 'cpu', threads: 1, config: { rerank: { policy: 'always' } } });
  const reranked = await openLinker({ indexDir, provider: 'cpu', threads: 1, config: { cache: { maxEntries: 0 }, rerank: { policy: 'always' } } });
  try {
    const strip = (out: LinkedNote[]) => out.map((n) => ({ ...n, linkedAt: 0 }));
    const together = await uncached.linkNotes(NOTES);
    const alone = [];
    for (const n of [...NOTES].reverse()) alone.unshift(...(await uncached.linkNotes([n])));
    assert.deepEqual(strip(alone), strip(together), 'candidates and scores do not depend on the other notes of a batch');
    const first = await cached.linkNotes(NOTES);
    const again = await cached.linkNotes([...NOTES].reverse());
    assert.ok(cached.cacheStats()!.hits >= 7, JSON.stringify(cached.cacheStats()));
    assert.deepEqual(strip(again.reverse()), strip(first));
    assert.deepEqual(strip(first), strip(await reranked.linkNotes(NOTES)), 'cached = uncached, reranker included');
  } finally {
    await uncached.close();
    await cached.close();
    await reranked.close();
  }
});

test('cuilink link: JSON lines in, LinkedNote lines out, bad lines reported and counted', () => {
  const input = join(root, 'notes.jsonl');
  const output = join(root, 'linked.jsonl');
  writeFileSync(input, [JSON.stringify(NOTES[0]), 'Patient John Doe, not json', JSON.stringify({ ...NOTES[1], mentions: [{ ...NOTES[1]!.mentions[0], end: 9999 }] }), JSON.stringify(NOTES[2])].join('\n'));
  const run = spawnSync(process.execPath, ['bin/cuilink.js', 'link', '--index', indexDir, '--in', input, '--out', output, '--provider', 'cpu', '--threads', '1', '--reranker', 'none'], { encoding: 'utf8' });
  assert.equal(run.status, 3, run.stderr);
  assert.match(run.stderr, /notes\.jsonl:2: not JSON/);
  assert.ok(!run.stderr.includes('Patient'), `the reason quotes no note text: ${run.stderr}`);
  assert.match(run.stderr, /notes\.jsonl:3: .*outside the text/);
  const lines = readFileSync(output, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as LinkedNote);
  assert.deepEqual(lines.map((l) => l.noteId), ['n1', 'n3']);
  assert.equal(lines[0]!.mentions[0]!.conceptId, 'FX:0000020');
});

test('cuilink link: an --in that cannot be read or an --out that cannot be written is one line and exit 2, before the models load', () => {
  for (const [args, message] of [
    [['--in', join(root, 'no-such.jsonl')], /--in .*no-such\.jsonl: no such file/],
    [['--in', root], /--in .*: a directory, not a file/],
    [['--out', join(root, 'no-such-dir', 'out.jsonl')], /--out .*out\.jsonl: ENOENT/],
  ] as const) {
    const run = spawnSync(process.execPath, ['bin/cuilink.js', 'link', '--index', indexDir, ...args, '--provider', 'cpu', '--threads', '1'], { encoding: 'utf8', input: '', timeout: 60_000 });
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, message);
    assert.ok(!/bi-encoder .* from /.test(run.stderr), `no model was loaded: ${run.stderr}`);
  }
});

test('cuilink link from another working directory: the recorded model and the shipped reranker resolve from the package root, and it says which were loaded', () => {
  const bin = join(process.cwd(), 'bin', 'cuilink.js');
  const input = join(root, 'one-note.jsonl');
  writeFileSync(input, `${JSON.stringify(NOTES[0])}\n`);
  const run = spawnSync(process.execPath, [bin, 'link', '--index', indexDir, '--in', input, '--provider', 'cpu', '--threads', '1'], { encoding: 'utf8', cwd: root });
  assert.equal(run.status, 0, run.stderr);
  const packageRoot = process.cwd();
  assert.match(run.stderr, new RegExp(`bi-encoder \\S+ from ${packageRoot}/models/default/biencoder: int8 on cpu`), run.stderr);
  assert.match(run.stderr, new RegExp(`cross-encoder \\S+ from ${packageRoot}/models/default/crossencoder: int8 on cpu`), run.stderr);
  assert.doesNotMatch(run.stderr, /execution provider/, 'no provider fallback line on a CPU run');
  const linked = JSON.parse(run.stdout.trim()) as LinkedNote;
  assert.ok(linked.modelVersion.includes('+'), 'the reranker is part of the model version');
});

test('cuilink link --reranker none says the reranker is off', () => {
  const run = spawnSync(process.execPath, ['bin/cuilink.js', 'link', '--index', indexDir, '--provider', 'cpu', '--threads', '1', '--reranker', 'none'], { encoding: 'utf8', input: '' });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stderr, /reranker: none \(turned off\)/);
});

test('cuilink link refuses an index built with another model', () => {
  const run = spawnSync(process.execPath, ['bin/cuilink.js', 'link', '--index', indexDir, '--model', 'test/fixtures/no-model', '--provider', 'cpu'], { encoding: 'utf8', input: '' });
  assert.equal(run.status, 2);
  assert.match(run.stderr, /cannot read model manifest/);
});

test('the shipped reranker runs with the link-config defaults (one place); a link config overrides each key', async () => {
  const manifest = JSON.parse(readFileSync('models/default/crossencoder/manifest.json', 'utf8')) as { id: string; rerank?: unknown };
  assert.equal(manifest.rerank, undefined, 'the shipped manifest carries no rerank settings of its own');
  const defaults = parseLinkConfig({}).rerank;
  assert.deepEqual(defaults, { policy: 'ambiguous', candidates: 3, margin: 0.05, weight: 0.3, prune: true, repeatWindow: 'first' }, 'the rerank defaults chosen on the train tune split');
  const withDefaults = await openLinker({ indexDir, provider: 'cpu', threads: 1 });
  const overridden = await openLinker({ indexDir, provider: 'cpu', threads: 1, config: { rerank: { policy: 'always', weight: 0.7 } } });
  try {
    assert.ok(withDefaults.versions.modelVersion.endsWith(`+${manifest.id}`));
    assert.deepEqual(withDefaults.config.rerank, defaults);
    assert.equal(overridden.config.rerank.weight, 0.7);
    assert.equal(overridden.config.rerank.policy, 'always');
    assert.equal(overridden.config.rerank.margin, defaults.margin);
    assert.equal(overridden.config.rerank.candidates, defaults.candidates);
    // Reranking every non-exact mention with the real cross-encoder keeps the right answers.
    const linked = await overridden.linkNotes(NOTES);
    assert.ok(linked.some((n) => n.mentions.some((m) => m.reranked)));
    assert.equal(top(linked, 'n1', 'm1').conceptId, 'FX:0000030');
    assert.equal(top(linked, 'n2', 'm2').conceptId, 'FX:0000050');
    assert.equal(top(linked, 'n3', 'm0').conceptId, 'FX:0000060');
  } finally {
    await withDefaults.close();
    await overridden.close();
  }
});
