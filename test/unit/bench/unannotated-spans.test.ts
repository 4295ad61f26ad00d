// The distillation tool's unannotated spans (bench/unannotated-spans.ts): heads and abbreviations
// come from the annotations given, spans never cross punctuation or start on a function word, and
// an annotated span is never repeated as an unannotated one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spanVocabulary, unannotatedSpans } from '../../../bench/unannotated-spans.ts';
import type { NoteInput } from '../../../src/link/types.ts';

function note(text: string, annotated: string[]): NoteInput {
  let from = 0;
  const mentions = annotated.map((m, i) => {
    const start = text.indexOf(m, from);
    from = start + m.length;
    return { id: `m${i}`, start, end: start + m.length, text: m, label: 'Disease' };
  });
  return { noteId: 'n', text, mentions };
}

test('heads are the last words of two or more annotated mentions; abbreviations are annotated upper-case tokens', () => {
  const v = spanVocabulary([note('Breast cancer and colon cancer; DM and the syndrome of X.', ['Breast cancer', 'colon cancer', 'DM', 'syndrome'])]);
  assert.deepEqual([...v.heads], ['cancer']); // "syndrome" ends one mention only
  assert.deepEqual([...v.abbreviations], ['DM']);
});

test('spans reach back up to three words, stop at punctuation and skip function-word starts', () => {
  const vocabulary = { heads: new Set(['cancer']), abbreviations: new Set(['DM']) };
  const n = note('Risk of early onset breast cancer, and DM in the family; DMD gene.', []);
  const spans = unannotatedSpans(n, vocabulary, 'Disease').map((s) => s.text);
  assert.deepEqual(spans, ['early onset breast cancer', 'onset breast cancer', 'breast cancer', 'cancer', 'DM']);
  for (const s of unannotatedSpans(n, vocabulary, 'Disease')) assert.equal(n.text.slice(s.start, s.end), s.text);
});

test('a span the note annotates is not repeated; hyphens join words', () => {
  const vocabulary = { heads: new Set(['cancer']), abbreviations: new Set<string>() };
  const n = note('Non-small-cell lung cancer was seen.', ['lung cancer']);
  assert.deepEqual(unannotatedSpans(n, vocabulary, 'Disease').map((s) => s.text), ['Non-small-cell lung cancer', 'cancer']);
});
