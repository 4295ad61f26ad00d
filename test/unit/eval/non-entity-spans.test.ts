import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NON_ENTITY_ID, NON_ENTITY_LABEL, formatNonEntity, nonEntityReport, withNonEntitySpans } from '../../../src/eval/confidence/non-entity-spans.ts';
import { mentionKey, type GoldCorpus } from '../../../src/eval/gold.ts';
import { emptyPubTatorStats } from '../../../src/eval/pubtator.ts';
import { ConceptStore } from '../../../src/kb/concept-store.ts';
import type { LinkedMention } from '../../../src/link/types.ts';
import type { ScoredMention } from '../../../src/eval/metrics/mention-record.ts';

const TEXT = 'Ataxia telangiectasia is rare. The kinase assay showed reduced activity in fibroblasts from two families with cystic fibrosis and Hereditary Ataxia.';
const store = ConceptStore.from([
  { id: 'MESH:D001260', name: 'Ataxia Telangiectasia', synonyms: [], semanticTypes: [], parents: [], xrefs: [], altIds: [] },
  { id: 'MESH:D003550', name: 'Cystic Fibrosis', synonyms: ['fibrosis, cystic'], semanticTypes: [], parents: [], xrefs: [], altIds: [] },
  { id: 'MESH:D001259', name: 'Ataxia, Hereditary', synonyms: ['reduced activity'], semanticTypes: [], parents: [], xrefs: [], altIds: [] },
]);

function corpus(): GoldCorpus {
  const span = (phrase: string) => {
    const start = TEXT.indexOf(phrase);
    return { start, end: start + phrase.length };
  };
  const at = span('Ataxia telangiectasia');
  const cf = span('cystic fibrosis');
  const mentions = [
    { id: `${at.start}-${at.end}`, ...at, text: 'Ataxia telangiectasia', label: 'Disease' },
    { id: `${cf.start}-${cf.end}`, ...cf, text: 'cystic fibrosis', label: 'Disease' },
  ];
  const gold = new Map(mentions.map((m) => [mentionKey('n1', m.id), { noteId: 'n1', mentionId: m.id, ids: ['MESH:D001260'], label: m.label, start: m.start, end: m.end }]));
  return { notes: [{ noteId: 'n1', text: TEXT, mentions, source: 'test' }], gold, stats: emptyPubTatorStats() };
}

test('non-entity spans: unmarked text away from every annotation, never a KB name or a gold mention, seeded', () => {
  const original = corpus();
  const sample = withNonEntitySpans(original, store, 50, 1);
  const added = sample.corpus.notes[0]!.mentions.filter((m) => m.label === NON_ENTITY_LABEL);
  assert.ok(added.length > 3, `spans: ${added.map((m) => m.text).join(' | ')}`);
  assert.equal(sample.spans, added.length);
  for (const m of added) {
    assert.equal(TEXT.slice(m.start, m.end), m.text);
    assert.ok(m.text.length >= 4 && m.text.split(' ').length <= 3, m.text);
    assert.ok(!/^(the|with|from|in|two)\b|\b(the|with|from|in|two)$/i.test(m.text), `not bounded by a stop word: ${m.text}`);
    for (const g of original.notes[0]!.mentions) assert.ok(m.end + 15 <= g.start || g.end + 15 <= m.start, `${m.text} keeps clear of ${g.text}`);
    assert.ok(!/^(reduced activity|hereditary ataxia)$/i.test(m.text), `a KB name (strict or loose key) is no non-entity: ${m.text}`);
    assert.deepEqual(sample.corpus.gold.get(mentionKey('n1', m.id))?.ids, [NON_ENTITY_ID]);
    assert.ok(sample.isNonEntity(mentionKey('n1', m.id)));
  }
  assert.ok(!added.some((m) => /[.,]/.test(m.text)), 'words joined by single spaces only');
  assert.ok(!sample.isNonEntity(mentionKey('n1', original.notes[0]!.mentions[0]!.id)), 'the gold mentions are not sampled spans');
  assert.equal(original.notes[0]!.mentions.length, 2, 'the input corpus is left as it was');
  assert.equal(original.gold.size, 2);
  const mentions = sample.corpus.notes[0]!.mentions;
  assert.ok(mentions.every((m, i) => i === 0 || mentions[i - 1]!.start <= m.start), 'in text order');
  const again = withNonEntitySpans(corpus(), store, 2, 1);
  assert.deepEqual(again.corpus.notes, withNonEntitySpans(corpus(), store, 2, 1).corpus.notes, 'the same seed draws the same spans');
  assert.equal(again.spans, 2);
  const seeds = [1, 2, 3, 4, 5].map((seed) => withNonEntitySpans(corpus(), store, 2, seed).corpus.notes[0]!.mentions.map((m) => m.id).join());
  assert.ok(new Set(seeds).size > 1, 'other seeds draw other spans');
});

test('non-entity report: how many sampled spans came out NIL, and how many links under confidence 0.5', () => {
  const sample = withNonEntitySpans(corpus(), store, 3, 1);
  const keys = [...sample.corpus.gold.values()];
  const scored = keys.map((g) => ({ noteId: g.noteId, mentionId: g.mentionId }) as ScoredMention);
  const spans = keys.filter((g) => g.ids[0] === NON_ENTITY_ID);
  const linked = keys.map((g) => {
    const k = spans.indexOf(g);
    return { nil: k === 0, confidence: k === 1 ? 0.2 : 0.9 } as LinkedMention;
  });
  const report = nonEntityReport({ scored, linked }, sample, 3, 1);
  assert.deepEqual([report.spans, report.nil, report.underHalf, report.withConfidence], [3, 1, 1, 2]);
  assert.match(formatNonEntity(report), /: 3, NIL 1 \(33\.3%\); of the 2 linked, 1 under confidence 0\.5/);
});
