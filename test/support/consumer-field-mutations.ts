import { MAX_GOLD_IDS } from '../../src/eval/gold.ts';
import type { GoldMentionRecord, LinkedMentionRecord, LinkedNoteRecord } from '../../src/stream/avro/index.ts';
import { UnionBranch } from './avro-writer.ts';
import type { ConsumerExpectation } from './consumer-mutants.ts';
import { HOSTILE_TEXTS, hugeText, int, NOT_UTF8, pick, type AvroText, type Random } from './note-mutations.ts';

/**
 * Field-level mutants of GoldMention and LinkedNote records (test/support/consumer-mutants.ts):
 * each takes a copy of a valid record and returns it with fields at their extremes, as the Avro
 * writer of test/support/avro-writer.ts writes them (strings may be raw bytes, numbers anything).
 */
export type FieldMutation<T> = (random: Random, record: T) => { what: string; record: unknown; expect?: ConsumerExpectation };

/** A string for a text field: hostile, huge, or raw bytes that are no UTF-8. */
function oddText(r: Random): { value: AvroText; what: string; utf8: boolean } {
  const roll = r();
  if (roll < 0.55) {
    const value = pick(r, [...HOSTILE_TEXTS, '__proto__', 'constructor', 'toString', 'other', 'n1\u0000m1', '../../etc/passwd', '%s%n', 'Disease\n', '\ud83d']);
    return { value, what: JSON.stringify(value.slice(0, 12)), utf8: true };
  }
  if (roll < 0.8) {
    const value = hugeText(pick(r, ['x', 'é', '😀', '\u0301', ' ']), pick(r, [513, 10_000, 100_001, 300_001]));
    return { value, what: `${value.length} units`, utf8: true };
  }
  const bad = pick(r, NOT_UTF8);
  return { value: Buffer.concat([Buffer.from('id'), bad]), what: `bytes ${bad.toString('hex')}`, utf8: false };
}

const text = (value: string | Buffer) => (typeof value === 'string' ? value : value.toString('hex'));
const NUMBERS = [Number.NaN, Infinity, -Infinity, -0, -1, 2, 1e308, -1e308, 5e-324] as const;
const INT_EXTREMES: [string, number | bigint, number | bigint][] = [
  ['negative start', -1, 3], ['reversed', 9, 2], ['empty', 4, 4], ['int32 max', 2 ** 31 - 1, 2 ** 31 - 1], ['int32 min', -(2 ** 31), 0],
  ['past any note', 0, 1_000_000_000], ['beyond int32', 2n ** 32n, 2n ** 32n + 1n], ['huge varint', 2n ** 62n, 2n ** 62n + 1n],
];
const TIMES = [0, -1, 2 ** 53 - 1, 8.64e15, 2n ** 53n + 1n, -(2n ** 63n), 2n ** 63n - 1n];

export const GOLD_MUTATIONS: Record<string, FieldMutation<GoldMentionRecord>> = {
  goldText: (r, gold) => {
    const field = pick(r, ['noteId', 'mentionId', 'label', 'annotator', 'id'] as const);
    const odd = oddText(r);
    const record: Record<string, unknown> = { ...gold };
    if (field === 'id') record.ids = [odd.value, ...gold.ids.slice(1)];
    else record[field] = odd.value;
    return { what: `${field} = ${odd.what}`, record, expect: odd.utf8 ? 'delivered' : { code: 'BAD_TEXT_ENCODING' } };
  },
  goldIds: (r, gold) => {
    const id = gold.ids[0] ?? 'MESH:D003920';
    const variant = pick(r, ['none (NIL)', 'one empty', 'blank', 'empty beside a real one', 'repeated 50,000 times', '50,000 distinct unknown', 'duplicates', 'composite in one', 'prototype names', 'unknown'] as const);
    const ids: Record<typeof variant, string[]> = {
      'none (NIL)': [], 'one empty': [''], blank: [' \t'], 'empty beside a real one': [id, ''], 'repeated 50,000 times': new Array<string>(50_000).fill(id),
      '50,000 distinct unknown': Array.from({ length: 50_000 }, (_, i) => `X:${i}`), duplicates: [id, id, id], 'composite in one': [`${id}|MESH:D001249`],
      'prototype names': ['__proto__', 'constructor', 'hasOwnProperty'], unknown: ['MESH:D999999', 'OMIM:000000'],
    };
    // More ids than a gold label may name (MAX_GOLD_IDS, src/eval/gold.ts) are the record's fault.
    return { what: `ids: ${variant}`, record: { ...gold, ids: ids[variant] }, expect: ids[variant].length > MAX_GOLD_IDS ? { code: 'RECORD_TOO_LARGE' } : 'delivered' };
  },
  goldOffsets: (r, gold) => {
    const [name, start, end] = pick(r, INT_EXTREMES);
    // A mention id the note's NER did not give (an annotator added the mention): only the span says what was labelled.
    const mentionId = r() < 0.5 ? gold.mentionId : `added-${int(r, 1000)}`;
    return { what: `span ${name} [${start}, ${end}) of mention ${mentionId}`, record: { ...gold, mentionId, start, end }, expect: typeof start === 'bigint' ? undefined : 'delivered' };
  },
  goldUnknownNote: (r, gold) => {
    const variant = pick(r, ['unknown note', 'unknown mention', 'note id of another case'] as const);
    const record = variant === 'unknown note' ? { ...gold, noteId: `n-unknown-${int(r, 1000)}` } : variant === 'unknown mention' ? { ...gold, mentionId: `m-unknown-${int(r, 1000)}` } : { ...gold, noteId: gold.noteId.toUpperCase() };
    return { what: variant, record, expect: 'delivered' };
  },
  goldAgain: (r, gold) => {
    // The same label again, or another label for the same mention (a correction).
    const corrected = r() < 0.5;
    return { what: corrected ? 'another label for the same mention' : 'the same label again', record: corrected ? { ...gold, ids: ['MESH:D001249'] } : gold, expect: 'delivered' };
  },
  goldTimes: (r, gold) => {
    const annotatedAt = pick(r, TIMES);
    return { what: `annotatedAt ${annotatedAt}`, record: { ...gold, annotatedAt } };
  },
  goldBadUnion: (r, gold) => {
    const branch = pick(r, [2, -1, 0x3f]);
    return { what: `annotator union branch ${branch}`, record: { ...gold, annotator: new UnionBranch(branch, 'x') }, expect: { code: 'UNDECODABLE' } };
  },
};

const mentionOf = (note: LinkedNoteRecord, r: Random): LinkedMentionRecord | undefined => (note.mentions.length === 0 ? undefined : note.mentions[int(r, note.mentions.length)]);

export const LINKED_MUTATIONS: Record<string, FieldMutation<LinkedNoteRecord>> = {
  linkedNumbers: (r, note) => {
    const m = mentionOf(note, r);
    const field = pick(r, ['score', 'confidence', 'inKb', 'memorySupport', 'candidate score', 'retrievalScore', 'every number'] as const);
    const value = pick(r, NUMBERS);
    if (m !== undefined) {
      if (field === 'score' || field === 'every number') m.score = value;
      if (field === 'confidence' || field === 'every number') m.confidence = value;
      if (field === 'inKb' || field === 'every number') m.inKb = value;
      if (field === 'memorySupport' || field === 'every number') m.memorySupport = value;
      for (const c of m.candidates) {
        if (field === 'candidate score' || field === 'every number') c.score = value;
        if (field === 'retrievalScore' || field === 'every number') c.retrievalScore = value;
      }
    }
    return { what: `${field} = ${value}`, record: note, expect: 'delivered' };
  },
  linkedCandidates: (r, note) => {
    const m = mentionOf(note, r);
    const variant = pick(r, ['none', '5,000 distinct', '5,000 of one concept', 'odd concept ids', 'NIL with candidates', 'linked without any'] as const);
    if (m !== undefined) {
      const top = m.candidates[0] ?? { conceptId: 'MESH:D003920', name: 'Diabetes Mellitus', semanticTypes: [], score: 0.5, retrievalScore: 0.5, exact: false, via: 'dense' };
      if (variant === 'none') m.candidates = [];
      if (variant === '5,000 distinct') m.candidates = Array.from({ length: 5000 }, (_, i) => ({ ...top, conceptId: `X:${i}` }));
      if (variant === '5,000 of one concept') m.candidates = new Array(5000).fill(top);
      if (variant === 'odd concept ids') m.candidates = ['', '__proto__', 'constructor', ' ', hugeText('C', 100_000)].map((conceptId) => ({ ...top, conceptId }));
      if (variant === 'NIL with candidates') [m.nil, m.conceptId] = [true, null];
      if (variant === 'linked without any') [m.candidates, m.nil, m.conceptId] = [[], false, top.conceptId];
    }
    return { what: `candidates: ${variant}`, record: note, expect: 'delivered' };
  },
  linkedMentions: (r, note) => {
    const variant = pick(r, ['none', 'a mention id twice', 'every mention id the same', '2,000 mentions', 'semantic types 10,000'] as const);
    const m = mentionOf(note, r);
    if (variant === 'none') note.mentions = [];
    if (variant === 'a mention id twice' && m) note.mentions.push({ ...m, start: m.start + 1 });
    if (variant === 'every mention id the same') for (const x of note.mentions) x.mentionId = 'm0';
    if (variant === '2,000 mentions' && m) note.mentions = Array.from({ length: 2000 }, (_, i) => ({ ...m, mentionId: `m${i}` }));
    if (variant === 'semantic types 10,000' && m) m.semanticTypes = Array.from({ length: 10_000 }, (_, i) => `T${i}`);
    return { what: `mentions: ${variant}`, record: note, expect: 'delivered' };
  },
  linkedText: (r, note) => {
    const field = pick(r, ['noteId', 'mentionId', 'label', 'conceptId', 'conceptName', 'via', 'expandedFrom', 'semanticType', 'candidate name', 'candidate via', 'linkerVersion', 'memoryVersion'] as const);
    const odd = oddText(r);
    const m = mentionOf(note, r) as unknown as Record<string, unknown> | undefined;
    // A mention field of a note without mentions, or a candidate field of a mention without candidates, writes nothing.
    let written = true;
    if (field === 'noteId' || field === 'linkerVersion' || field === 'memoryVersion') (note as unknown as Record<string, unknown>)[field] = odd.value;
    else if (m === undefined) written = false;
    else if (field === 'semanticType') m.semanticTypes = [odd.value];
    else if (field === 'candidate name' || field === 'candidate via') {
      const candidates = m.candidates as Record<string, unknown>[];
      written = candidates.length > 0;
      for (const c of candidates) c[field === 'candidate name' ? 'name' : 'via'] = odd.value;
    } else m[field] = odd.value;
    return { what: `${field} = ${odd.what}`, record: note, expect: odd.utf8 || !written ? 'delivered' : { code: 'BAD_TEXT_ENCODING' } };
  },
  linkedMemoryVersion: (r, note) => {
    const memoryVersion = pick(r, [null, '', '__proto__', '000001-a', `${String(int(r, 40)).padStart(6, '0')}-x`, '999999999999999999999999-x', `${'9'.repeat(400)}-x`, '-1-x', '000007', hugeText('v', 100_000)]);
    return { what: `memoryVersion ${text(memoryVersion ?? 'null').slice(0, 30)}`, record: { ...note, memoryVersion }, expect: 'delivered' };
  },
  linkedOffsets: (r, note) => {
    const [name, start, end] = pick(r, INT_EXTREMES);
    const m = mentionOf(note, r);
    if (m) Object.assign(m, { start, end });
    return { what: `mention span ${name} [${start}, ${end})`, record: note, expect: typeof start === 'bigint' && m ? undefined : 'delivered' };
  },
  linkedUnknownNote: (r, note) => ({ what: 'a note no gold names', record: { ...note, noteId: `n-unlabelled-${int(r, 1000)}` }, expect: 'delivered' }),
  linkedTimes: (r, note) => {
    const linkedAt = pick(r, TIMES);
    return { what: `linkedAt ${linkedAt}`, record: { ...note, linkedAt } };
  },
  linkedBadUnion: (r, note) => {
    const branch = pick(r, [2, -1, 0x3f]);
    return { what: `memoryVersion union branch ${branch}`, record: { ...note, memoryVersion: new UnionBranch(branch, 'x') }, expect: { code: 'UNDECODABLE' } };
  },
};
