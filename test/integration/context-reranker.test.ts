import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildIndexFromKb } from '../../src/link/build-index-from-kb.ts';
import { openLinker } from '../../src/link/open-linker.ts';
import { CrossEncoder } from '../../src/encode/cross-encoder.ts';
import { buildQuery } from '../../src/text/context-window.ts';
import type { LinkedNote, NoteInput } from '../../src/link/types.ts';

// The real bi-encoder and a real cross-encoder (the shipped weights) under a manifest that reads
// a context window of 400 characters a side: far more tokens than its maxLength of 64, so every
// pair is cut at token level around the mention's marker.
const MODEL = 'models/default/biencoder';
const SHIPPED_RERANKER = 'models/default/crossencoder';
const CONTEXT_CHARS = 400;
const MAX_LENGTH = 64;
let root: string;
let indexDir: string;
let rerankerDir: string;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-context-ce-'));
  indexDir = join(root, 'index');
  await buildIndexFromKb({ kbPaths: ['test/fixtures/kb/clinical-mini.obo'], modelDir: MODEL, outDir: indexDir, provider: 'cpu', threads: 1, progress: false });
  rerankerDir = join(root, 'reranker');
  const manifest = JSON.parse(readFileSync(join(SHIPPED_RERANKER, 'manifest.json'), 'utf8')) as { files: Record<string, string>; tokenizer: string; maxLength: number; query: Record<string, unknown>; id: string };
  // The model files as they are (their checksums are checked), under a manifest that reads context.
  mkdirSync(rerankerDir);
  for (const file of [manifest.tokenizer, ...Object.values(manifest.files)]) symlinkSync(resolve(SHIPPED_RERANKER, file), join(rerankerDir, file));
  writeFileSync(join(rerankerDir, 'manifest.json'), JSON.stringify({ ...manifest, id: `${manifest.id}-context-test`, maxLength: MAX_LENGTH, query: { ...manifest.query, mode: 'context', contextChars: CONTEXT_CHARS } }));
});
after(() => rmSync(root, { recursive: true, force: true }));

function note(noteId: string, text: string, surface: string, occurrence: 'first' | 'last' = 'first'): NoteInput {
  const start = occurrence === 'first' ? text.indexOf(surface) : text.lastIndexOf(surface);
  assert.ok(start >= 0);
  return { noteId, text, mentions: [{ id: 'm0', start, end: start + surface.length, text: surface, label: 'Disease' }] };
}

const filler = (words: number) => Array.from({ length: words }, (_, i) => `word${i % 7}`).join(' ');
const emoji = '\u{1F600}';
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

test('a context window that is empty, cut inside a surrogate pair, or longer than the model maximum links without error', async () => {
  // The window's left edge (mention start − 400) falls between the emoji's two UTF-16 halves.
  const tail = ` ${filler(80)}`.slice(0, CONTEXT_CHARS - 2) + ' ';
  const surrogate = `x ${emoji}${tail}pneumonia`;
  assert.ok(surrogate.charCodeAt(surrogate.indexOf('pneumonia') - CONTEXT_CHARS) >= 0xdc00, 'fixture: the cut is inside the pair');
  const notes = [
    note('empty', 'pneumonia', 'pneumonia'),
    note('blank', '  \n pneumonia \t ', 'pneumonia'),
    note('surrogate', surrogate, 'pneumonia'),
    note('long', `${filler(500)} history of heart attack ${filler(500)}`, 'heart attack'),
    note('emoji-mention', `seizure ${emoji}${emoji} yesterday`, `seizure ${emoji}${emoji}`),
  ];
  const linker = await openLinker({ indexDir, provider: 'cpu', threads: 1, rerankerDir, calibration: false, config: { rerank: { policy: 'always' } } });
  const scorer = await CrossEncoder.open(rerankerDir, { provider: 'cpu', threads: 1 });
  try {
    const linked = await linker.linkNotes(notes);
    const byNote = new Map(linked.map((n) => [n.noteId, n.mentions[0]!]));
    for (const n of notes) {
      const m = byNote.get(n.noteId)!;
      assert.ok(m.candidates.length > 0 && m.reranked, `${n.noteId}: linked and reranked`);
      const query = buildQuery(n.text, n.mentions[0]!, scorer.manifest.query);
      assert.doesNotMatch(query, LONE_SURROGATE, n.noteId);
      const { ids } = scorer.tokenizePair(query, 'Pneumonia ; Disease');
      assert.ok(ids.length <= MAX_LENGTH, `${n.noteId}: ${ids.length} tokens`);
      assert.ok(ids.includes(scorer.tokenizePair('[M]', '').ids[1]!), `${n.noteId}: the marker survives truncation`);
    }
    assert.equal(byNote.get('empty')!.conceptId, byNote.get('blank')!.conceptId);
    assert.equal(byNote.get('long')!.conceptId, 'FX:0000020');
  } finally {
    await linker.close();
    await scorer.close();
  }
});

test('the link cache stays exact with a reranker that reads context: the window is part of the key', async () => {
  const notes = [
    note('a', 'Admitted with pneumonia after a cold.', 'pneumonia'),
    note('b', 'No sign of pneumonia on the chest film; heart attack ruled out.', 'pneumonia'),
    note('c', 'Admitted with pneumonia after a cold.', 'pneumonia'),
    note('d', 'Pneumonia. Later pneumonia again', 'pneumonia', 'last'),
  ];
  const strip = (out: LinkedNote[]) => out.map((n) => ({ ...n, linkedAt: 0 }));
  const config = { rerank: { policy: 'always' as const } };
  const uncached = await openLinker({ indexDir, provider: 'cpu', threads: 1, rerankerDir, calibration: false, config: { ...config, cache: { maxEntries: 0 } } });
  const cached = await openLinker({ indexDir, provider: 'cpu', threads: 1, rerankerDir, calibration: false, config });
  try {
    const truth = strip(await uncached.linkNotes(notes));
    assert.deepEqual(strip(await cached.linkNotes(notes)), truth);
    const first = cached.cacheStats()!;
    // a and c share mention and window (linked once, c counts as a hit); b and d read other windows.
    // Entries: the mention's state before reranking (one key: same text, label and lookups) and one
    // finished link per window.
    assert.deepEqual([first.entries, first.hits, first.misses, first.rerankOnly], [4, 1, 3, 0]);
    assert.deepEqual(strip(await cached.linkNotes(notes)), truth);
    const second = cached.cacheStats()!;
    assert.deepEqual([second.hits - first.hits, second.misses - first.misses], [4, 0], 'every mention is answered from the cache');
    // The same mention in a new window: a miss, retrieval from the cache, the reranker alone reads the
    // new window, and the link equals linking from scratch.
    const other = note('e', 'Family history: pneumonia in a sibling.', 'pneumonia');
    const [fresh] = await cached.linkNotes([other]);
    const third = cached.cacheStats()!;
    assert.deepEqual([third.misses - second.misses, third.rerankOnly - second.rerankOnly], [1, 1]);
    const [truthOther] = await uncached.linkNotes([other]);
    assert.deepEqual({ ...fresh!, linkedAt: 0 }, { ...truthOther!, linkedAt: 0 });
    assert.ok(fresh!.mentions[0]!.reranked);
  } finally {
    await uncached.close();
    await cached.close();
  }
});

test('a mention repeated in its note is reranked once, in its first window (repeatWindow first), as uncached linking gives; `own` reads each window', async () => {
  const text = 'Admitted with pneumonia after a cold. On the third day the pneumonia had cleared.';
  const at = [text.indexOf('pneumonia'), text.lastIndexOf('pneumonia')];
  // The later occurrence first: the window read is the earliest one's whatever the input order.
  const repeated: NoteInput = { noteId: 'r', text, mentions: [...at].reverse().map((start, i) => ({ id: `m${i}`, start, end: start + 9, text: 'pneumonia', label: 'Disease' })) };
  const strip = (out: LinkedNote[]) => out.map((n) => ({ ...n, linkedAt: 0 }));
  const open = (repeatWindow: 'own' | 'first', extra: object = {}) => openLinker({ indexDir, provider: 'cpu', threads: 1, rerankerDir, calibration: false, config: { rerank: { policy: 'always', repeatWindow }, ...extra } });
  const uncached = await open('first', { cache: { maxEntries: 0 } });
  const cached = await open('first');
  const own = await open('own');
  try {
    const truth = strip(await uncached.linkNotes([repeated]));
    assert.deepEqual(strip(await cached.linkNotes([repeated])), truth);
    const [a, b] = truth[0]!.mentions;
    assert.deepEqual([a!.start, b!.start], [at[1], at[0]], 'output in input order');
    assert.deepEqual(a!.candidates, b!.candidates, 'one reading for both occurrences');
    const stats = cached.cacheStats()!;
    assert.deepEqual([stats.misses, stats.hits], [1, 1], 'the repeat is answered by the first occurrence');
    await own.linkNotes([repeated]);
    assert.deepEqual([own.cacheStats()!.misses, own.cacheStats()!.hits], [2, 0], "'own': two windows, two links");
  } finally {
    await uncached.close();
    await cached.close();
    await own.close();
  }
});

test('a mention the reranker does not score is cached once for every window', async () => {
  // A unique exact KB name under the ambiguous policy is never reranked: its window cannot change it.
  const cached = await openLinker({ indexDir, provider: 'cpu', threads: 1, rerankerDir, calibration: false, config: { rerank: { policy: 'ambiguous' } } });
  try {
    const [first] = await cached.linkNotes([note('x', 'Known hypertension since 2010.', 'hypertension')]);
    assert.equal(first!.mentions[0]!.reranked, false);
    const before = cached.cacheStats()!;
    const [second] = await cached.linkNotes([note('y', 'Family history of hypertension and stroke.', 'hypertension')]);
    const after = cached.cacheStats()!;
    assert.deepEqual([after.hits - before.hits, after.misses - before.misses, after.entries], [1, 0, 1]);
    assert.equal(second!.mentions[0]!.conceptId, first!.mentions[0]!.conceptId);
  } finally {
    await cached.close();
  }
});

test('fp16 models (one batch for all mentions): a mention in a new window is reranked with the others, as linking afresh would', async () => {
  const config = { rerank: { policy: 'always' as const } };
  const open = (extra: object) => openLinker({ indexDir, provider: 'cpu', threads: 1, precision: 'fp16', rerankerDir, calibration: false, config: { ...config, ...extra } });
  const uncached = await open({ cache: { maxEntries: 0 } });
  const cached = await open({});
  try {
    const first = [note('a', 'Admitted with pneumonia after a cold.', 'pneumonia')];
    await cached.linkNotes(first);
    const later = [note('e', 'Family history: pneumonia in a sibling.', 'pneumonia'), note('f', 'Known hypertension, no pneumonia.', 'hypertension')];
    const before = cached.cacheStats()!;
    const strip = (out: LinkedNote[]) => out.map((n) => ({ ...n, linkedAt: 0 }));
    assert.deepEqual(strip(await cached.linkNotes(later)), strip(await uncached.linkNotes(later)));
    assert.equal(cached.cacheStats()!.rerankOnly - before.rerankOnly, 1, 'e: retrieval from the cache, the reranker alone ran');
  } finally {
    await uncached.close();
    await cached.close();
  }
});
