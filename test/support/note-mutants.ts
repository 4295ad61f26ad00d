import type { NoteInput } from '../../src/link/types.ts';
import { knownSchemas, SCHEMA_FINGERPRINT_HEADER } from '../../src/stream/avro/index.ts';
import {
  HOSTILE_TEXTS, hugeText, int, NOT_UTF8, noteEventBody, pick, rawNote, singleObject,
  type AvroText, type MutantRecord, type Random, type RawMention, type RawNote,
} from './note-mutations.ts';

/** Limits of the stage's default config (src/stream/stage-config.ts), which the expectations follow. */
const MAX_NOTE_CHARS = 100_000;
const MAX_MENTIONS = 1_000;
const MAX_MENTION_CHARS = 512;

/** A valid note whose mentions are the first unused occurrences of `spans` in `text`. */
export function noteOf(noteId: string, text: string, spans: [string, string][]): NoteInput {
  const used = new Set<number>();
  const mentions = spans.map(([surface, label], i) => {
    let start = text.indexOf(surface);
    while (used.has(start)) start = text.indexOf(surface, start + 1);
    if (start < 0) throw new Error(`'${surface}' is not in '${text}'`);
    used.add(start);
    return { id: `m${i}`, start, end: start + surface.length, text: surface, label, score: 0.9 };
  });
  return { noteId, text, mentions, source: 'fuzz', timestamp: 1_700_000_000_000, nerModelVersion: 'ner-1' };
}

/** Valid notes over the fixture KB (test/fixtures/link-concepts.ts): every one links. */
export const BASE_NOTES: readonly NoteInput[] = [
  noteOf('n-abbrev', 'Pt with heart attack (MI) and type 2 diabetes; on metformin hydrochloride. MI again.', [['heart attack', 'Disease'], ['MI', 'Disease'], ['type 2 diabetes', 'Disease'], ['metformin hydrochloride', 'Chemical'], ['MI', 'Disease']]),
  noteOf('n-unicode', '😀 Hypertension \u200fand asthma\u0301 noted; high cholesterol 👩‍⚕️ İΣ', [['Hypertension', 'Disease'], ['asthma\u0301', 'Disease'], ['high cholesterol', 'Disease']]),
  noteOf('n-edges', 'pneumonia with paracetamol and pneumonia', [['pneumonia', 'Disease'], ['paracetamol', 'Chemical'], ['pneumonia', 'Disease']]),
  noteOf('n-overlap', 'colorectal cancer (CRC) and bronchial asthma', [['colorectal cancer', 'Disease'], ['cancer', 'Disease'], ['CRC', 'Disease'], ['bronchial asthma', 'Disease'], ['asthma', 'Disease']]),
  noteOf('n-emoji-edge', '🩺DM🩺', [['DM', 'Disease']]),
];

const clone = (note: RawNote): RawNote => ({ ...note, mentions: note.mentions.map((m) => ({ ...m })) });

/** A record of the (possibly mutated) raw note, single-object encoded as the current NoteEvent. */
function record(what: string, note: RawNote, expect?: MutantRecord['expect']): MutantRecord {
  return { what, value: singleObject(note), headers: [['cuilink-schema', 'org.cuilink.NoteEvent']], expect };
}

/** Whether the validator (src/link/validate-note.ts) takes this note whole: then the stage must link it. */
function valid(note: RawNote): boolean {
  if (typeof note.noteId !== 'string' || note.noteId === '' || typeof note.text !== 'string') return false;
  // The decoder's bound on any one string (input-record.ts): 3 UTF-8 bytes per unit of the longest note.
  const strings = [note.noteId, note.text, note.source, note.nerModelVersion, ...note.mentions.flatMap((m) => [m.id, m.text, m.label])];
  if (strings.some((s) => s !== null && (typeof s === 'string' ? Buffer.byteLength(s) : s.length) > MAX_NOTE_CHARS * 3)) return false;
  const text = note.text;
  if (text.length === 0 || text.length > MAX_NOTE_CHARS || Buffer.byteLength(text) > MAX_NOTE_CHARS * 3 || note.mentions.length > MAX_MENTIONS) return false;
  const ids = new Set<string>();
  return note.mentions.every((m) => {
    if (typeof m.id !== 'string' || m.id === '' || ids.has(m.id) || typeof m.start !== 'number' || typeof m.end !== 'number') return false;
    ids.add(m.id);
    const written = (s: AvroText) => (typeof s === 'string' ? Buffer.from(s).toString() : s.toString());
    return m.start >= 0 && m.end <= text.length && m.start < m.end && m.end - m.start <= MAX_MENTION_CHARS && typeof m.text === 'string' && written(m.text) === written(text).slice(m.start, m.end) && written(text).length === text.length && typeof m.label === 'string' && (typeof m.score === 'number' || m.score === null);
  });
}

/** Bytes of what a LinkedNote repeats from its note (key and value): near the topic's limit it may be OUTPUT_TOO_LARGE instead. */
const carriedBytes = (note: RawNote): number => [note.noteId, note.noteId, ...note.mentions.flatMap((m) => [m.id, m.label])].reduce((sum, s) => sum + Buffer.byteLength(s as string), 0);

const expectOf = (note: RawNote): MutantRecord['expect'] => (!valid(note) ? 'dead' : carriedBytes(note) > 900_000 ? undefined : 'linked');

function flip(value: Buffer, random: Random, from: number): Buffer {
  const out = Buffer.from(value);
  const flips = 1 + int(random, 4);
  for (let i = 0; i < flips; i++) out[from + int(random, out.length - from)]! ^= 1 << int(random, 8);
  return out;
}

/** Text `insert`ed at `at`; mentions after it shifted, a mention around it widened to cover it. */
function insertKeepingSpans(note: RawNote, at: number, insert: string): RawNote {
  const text = note.text as string;
  const out = clone(note);
  out.text = text.slice(0, at) + insert + text.slice(at);
  for (const m of out.mentions) {
    const [start, end] = [Number(m.start), Number(m.end)];
    m.start = start >= at ? start + insert.length : start;
    m.end = end > at ? end + insert.length : end;
    m.text = out.text.slice(Number(m.start), Number(m.end));
  }
  return out;
}

const STRING_FIELDS = ['noteId', 'text', 'source', 'nerModelVersion', 'mention.id', 'mention.text', 'mention.label'] as const;

function setField(note: RawNote, field: (typeof STRING_FIELDS)[number], value: AvroText, mention: number): void {
  if (field === 'noteId' || field === 'text' || field === 'source' || field === 'nerModelVersion') note[field] = value;
  else if (note.mentions[mention]) note.mentions[mention]![field === 'mention.id' ? 'id' : field === 'mention.text' ? 'text' : 'label'] = value;
}

/** `long form (SF)` definitions chained so that each long form is made of the next one's short forms. */
export function abbreviationChain(levels: number, mentionRepeats: number): NoteInput {
  const letters = 'ABCDEFGHIJKLMNOP';
  const sf = (i: number) => letters[i]! + letters[i + 1]!.repeat(9);
  const repeat = (s: string, n: number) => Array.from({ length: n }, () => s).join(' ');
  const deepest = `${letters[levels]!.repeat(10)}${'z'.repeat(240)} (${letters[levels]!.repeat(10)}).`;
  const definitions = Array.from({ length: levels }, (_, i) => `${letters[i]} ${repeat(i === levels - 1 ? letters[levels]!.repeat(10) : sf(i + 1), 14)} (${sf(i)}).`);
  const mention = repeat(sf(0), mentionRepeats);
  return noteOf(`n-chain-${levels}`, `${deepest} ${definitions.join(' ')} Then ${mention}.`, [[mention, 'Disease']]);
}

/** One mention that links to nothing (NIL: it goes to review), its note id, id and label `bytes` long each. */
export function hugeIdsNote(bytes = MAX_NOTE_CHARS * 3): NoteInput {
  const text = 'Exam found a zorbital lump.';
  const start = text.indexOf('zorbital lump');
  return { noteId: hugeText('n', bytes), text, mentions: [{ id: hugeText('i', bytes), start, end: start + 13, text: 'zorbital lump', label: hugeText('L', bytes) }] };
}

type Mutation = (random: Random, base: NoteInput) => MutantRecord;

/** Every mutation, by name; each takes a valid base note and returns one mutant record. */
export const MUTATIONS: Record<string, Mutation> = {
  flipAnyBits: (r, base) => ({ what: 'bits flipped anywhere', value: flip(singleObject(rawNote(base)), r, 0), headers: [] }),
  flipBodyBits: (r, base) => ({ what: 'bits flipped in the body', value: flip(singleObject(rawNote(base)), r, 10), headers: [] }),
  truncate: (r, base) => {
    const value = singleObject(rawNote(base));
    const at = int(r, value.length);
    return { what: `cut to ${at} bytes`, value: value.subarray(0, at), headers: [], expect: at === 0 ? { code: 'EMPTY_RECORD' } : 'dead' };
  },
  extend: (r, base) => {
    const extra = Buffer.from(Array.from({ length: 1 + int(r, 16) }, () => int(r, 256)));
    return { what: `${extra.length} bytes appended`, value: Buffer.concat([singleObject(rawNote(base)), extra]), headers: [], expect: { code: 'UNDECODABLE' } };
  },
  splice: (r, base) => {
    const value = singleObject(rawNote(base));
    const [at, length] = [10 + int(r, value.length - 10), 1 + int(r, 8)];
    const dropped = r() < 0.5;
    const out = dropped ? Buffer.concat([value.subarray(0, at), value.subarray(at + length)]) : Buffer.concat([value.subarray(0, at + length), value.subarray(at)]);
    return { what: `${length} bytes at ${at} ${dropped ? 'dropped' : 'repeated'}`, value: out, headers: [] };
  },
  varintBomb: (r, base) => {
    const value = singleObject(rawNote(base));
    const at = 10 + int(r, value.length - 10);
    const bomb = Buffer.from([...Array.from({ length: int(r, 12) }, () => 0xff), int(r, 128)]);
    return { what: `varint ${bomb.toString('hex')} inserted at ${at}`, value: Buffer.concat([value.subarray(0, at), bomb, value.subarray(at)]), headers: [] };
  },
  wrongMagic: (r, base) => {
    const value = Buffer.from(singleObject(rawNote(base)));
    const at = int(r, 2);
    value[at] = (value[at]! + 1 + int(r, 255)) & 0xff;
    return { what: `magic byte ${at} = ${value[at]}`, value, headers: [], expect: { code: 'UNKNOWN_SCHEMA' } };
  },
  wrongFingerprint: (r, base) => {
    const value = Buffer.from(singleObject(rawNote(base)));
    const at = 2 + int(r, 8);
    value[at]! ^= 1 + int(r, 255);
    return { what: `fingerprint byte ${at} changed`, value, headers: [], expect: { code: 'UNKNOWN_SCHEMA' } };
  },
  otherKindFingerprint: (r, base) => {
    const other = pick(r, (['LinkedNote', 'DeadLetter', 'GoldMention', 'ReviewMention', 'LabelRequest'] as const).flatMap((k) => knownSchemas().all(k)));
    const value = Buffer.from(singleObject(rawNote(base)));
    other.singleObjectFingerprint.copy(value, 2);
    return { what: `fingerprint of ${other.file}`, value, headers: [], expect: { code: 'UNKNOWN_SCHEMA' } };
  },
  schemaVersions: (r, base) => {
    const [fingerprint, body] = [pick(r, [1, 2] as const), pick(r, [1, 2] as const)];
    const value = Buffer.from(singleObject(rawNote(base), body));
    knownSchemas().all('NoteEvent').find((s) => s.current === (fingerprint === 2))!.singleObjectFingerprint.copy(value, 2);
    return { what: `v${body} body under the v${fingerprint} fingerprint`, value, headers: [], expect: fingerprint === body ? 'linked' : { code: 'UNDECODABLE' } };
  },
  fingerprintHeader: (r, base) => {
    const current = knownSchemas().current('NoteEvent').fingerprint;
    const variant = pick(r, ['as written', 'upper case', 'other schema', 'garbage', 'empty', 'null', 'repeated', 'beside a single-object value'] as const);
    const header: Record<typeof variant, string | Buffer | null> = {
      'as written': current, 'upper case': current.toUpperCase(), 'other schema': knownSchemas().current('LinkedNote').fingerprint, garbage: Buffer.from([0xff, 0xfe, 0x00, 0xed, 0xa0, 0x80]),
      empty: '', null: null, repeated: current, 'beside a single-object value': '0'.repeat(64),
    };
    const headers: MutantRecord['headers'] = [[SCHEMA_FINGERPRINT_HEADER, header[variant]]];
    // A repeated header is read by its first value.
    if (variant === 'repeated') headers.push([SCHEMA_FINGERPRINT_HEADER, '0'.repeat(64)]);
    const value = variant === 'beside a single-object value' ? singleObject(rawNote(base)) : noteEventBody(rawNote(base));
    const expect: MutantRecord['expect'] = variant === 'as written' || variant === 'upper case' || variant === 'repeated' ? 'linked' : { code: 'UNKNOWN_SCHEMA' };
    return { what: `deprecated fingerprint header: ${variant}`, value, headers, expect };
  },
  confluentFraming: (r, base) => {
    const id = Buffer.alloc(4);
    id.writeInt32BE(int(r, 2 ** 31) * (r() < 0.5 ? -1 : 1));
    return { what: `Confluent framing, schema id ${id.readInt32BE()}`, value: Buffer.concat([Buffer.from([0]), id, singleObject(rawNote(base)).subarray(10)]), headers: [], expect: { code: 'UNKNOWN_SCHEMA' } };
  },
  emptyValue: (r) => {
    const value = pick(r, [null, Buffer.alloc(0)]);
    return { what: `value ${value === null ? 'null (tombstone)' : 'of 0 bytes'}`, value, headers: [], expect: { code: 'EMPTY_RECORD' } };
  },
  garbage: (r) => {
    const body = Buffer.from(Array.from({ length: int(r, 64) }, () => int(r, 256)));
    return { what: `random body of ${body.length} bytes`, value: Buffer.concat([singleObject(rawNote(BASE_NOTES[0]!)).subarray(0, 10), body]), headers: [] };
  },
  hostileString: (r, base) => {
    const note = rawNote(base);
    const field = pick(r, STRING_FIELDS);
    const mention = int(r, note.mentions.length);
    const value = r() < 0.7 ? pick(r, HOSTILE_TEXTS) : hugeText(pick(r, ['x', 'é', '😀', '\u0301', ' ']), pick(r, [513, 99_999, 100_000, 100_001, 300_001]));
    setField(note, field, value, mention);
    return record(`${field} (mention ${mention}) = ${JSON.stringify(value.slice(0, 12))}… (${value.length} units)`, note, expectOf(note));
  },
  notUtf8: (r, base) => {
    const note = rawNote(base);
    const field = pick(r, STRING_FIELDS.filter((f) => f !== 'source' && f !== 'nerModelVersion' || r() < 0.5));
    const mention = int(r, note.mentions.length);
    const bad = pick(r, NOT_UTF8);
    const where = pick(r, ['prefix', 'suffix'] as const);
    const around = Buffer.from(field === 'noteId' ? base.noteId : field === 'text' ? base.text : 'fuzz');
    setField(note, field, where === 'prefix' ? Buffer.concat([bad, around]) : Buffer.concat([around, bad]), mention);
    return record(`${field} (mention ${mention}) with ${bad.toString('hex')} as ${where}`, note, { code: 'BAD_TEXT_ENCODING' });
  },
  insertKeepingSpans: (r, base) => {
    const insert = r() < 0.8 ? pick(r, HOSTILE_TEXTS) : hugeText(pick(r, ['a', '😀', ' (', '.']), 1 + int(r, 2000));
    const at = int(r, base.text.length + 1);
    const note = insertKeepingSpans(rawNote(base), at, insert);
    return record(`${JSON.stringify(insert.slice(0, 12))} (${insert.length} units) inserted at ${at}, spans kept`, note, expectOf(note));
  },
  offsets: (r, base) => {
    const note = rawNote(base);
    const i = int(r, note.mentions.length);
    const m = note.mentions[i]!;
    const [start, end, length] = [Number(m.start), Number(m.end), base.text.length];
    const surrogate = [...base.text.matchAll(/[\ud800-\udbff]/g)].map((x) => x.index! + 1);
    const choices: [string, number | bigint, number | bigint][] = [
      ['negative start', -1 - int(r, 3), end], ['end beyond text', start, length + 1 + int(r, 3)], ['reversed', end, start], ['empty', start, start],
      ['at the very end', length, length + 1], ['int32 max', 2 ** 31 - 1, 2 ** 31 - 1], ['int32 min', -(2 ** 31), end], ['beyond int32', 2n ** 32n + BigInt(start), 2n ** 32n + BigInt(end)],
      ['huge varint', 2n ** 62n, 2n ** 62n + 1n], ['whole text', 0, length], ['random', int(r, length + 4) - 2, int(r, length + 4) - 2],
      ...(surrogate.length > 0 ? [['inside a surrogate pair', pick(r, surrogate), pick(r, surrogate) + 2] as [string, number, number]] : []),
    ];
    const [name, s, e] = pick(r, choices);
    [m.start, m.end] = [s, e];
    // The mention text as the span reads it, where it can: the offsets are what is under test.
    if (typeof s === 'number' && typeof e === 'number' && s >= 0 && e <= length && s < e) m.text = base.text.slice(s, e);
    return record(`mention ${i} offsets ${name}: [${s}, ${e})`, note, typeof s === 'bigint' ? 'dead' : expectOf(note));
  },
  overlapping: (r, base) => {
    const note = rawNote(base);
    const length = base.text.length;
    const start = int(r, length);
    const end = Math.min(length, start + 1 + int(r, 20));
    note.mentions.push({ id: `overlap-${start}`, start, end, text: base.text.slice(start, end), label: 'Disease', score: null });
    return record(`extra mention [${start}, ${end}) over the others`, note, expectOf(note));
  },
  mentionIds: (r, base) => {
    const note = rawNote(base);
    const variant = pick(r, ['duplicate', 'empty', 'same span twice'] as const);
    const copy: RawMention = { ...note.mentions[int(r, note.mentions.length)]! };
    if (variant === 'empty') copy.id = '';
    if (variant === 'same span twice') copy.id = `${String(copy.id)}-again`;
    note.mentions.push(copy);
    return record(`mention id: ${variant}`, note, variant === 'same span twice' ? 'linked' : { code: 'BAD_MENTION' });
  },
  manyMentions: (r) => {
    const count = pick(r, [0, 1, 999, MAX_MENTIONS, MAX_MENTIONS + 1, 3000]);
    const words = ['asthma', 'DM', 'fever', 'MI', '😀x', 'pneumonia'];
    const parts = Array.from({ length: Math.max(count, 1) }, (_, i) => words[i % words.length]!);
    const text = parts.join(' ');
    let at = 0;
    const mentions = parts.slice(0, count).map((w, i) => {
      const m = { id: `m${i}`, start: at, end: at + w.length, text: w, label: 'Disease', score: 0.5 };
      at += w.length + 1;
      return m;
    });
    const note: RawNote = { noteId: `n-many-${count}`, text, mentions, source: null, timestamp: 1, nerModelVersion: null, blocks: pick(r, ['one', 'each', 'negative'] as const) };
    return record(`${count} mentions (${note.blocks} block)`, note, count > MAX_MENTIONS ? { code: 'NOTE_TOO_LARGE' } : 'linked');
  },
  labels: (r, base) => {
    const note = rawNote(base);
    const label = pick(r, ['', 'constructor', '__proto__', 'toString', 'hasOwnProperty', hugeText('L', 100_000), hugeText('😀', 150_000), '\u0000']);
    for (const m of note.mentions) m.label = label;
    return record(`every label = ${JSON.stringify(label.slice(0, 12))} (${label.length} units)`, note, expectOf(note));
  },
  scores: (r, base) => {
    const note = rawNote(base);
    const score = pick(r, [Number.NaN, Infinity, -Infinity, -0, 1e308, -1e308, 5e-324, null, { branch: 2 }, { branch: -1 }]);
    note.mentions[int(r, note.mentions.length)]!.score = score;
    return record(`score ${JSON.stringify(score)}`, note, typeof score === 'object' && score !== null ? { code: 'UNDECODABLE' } : 'linked');
  },
  timestamps: (r, base) => {
    const note = rawNote(base);
    note.timestamp = pick(r, [0, -1, 2 ** 53 - 1, 2n ** 53n + 1n, -(2n ** 63n), 2n ** 63n - 1n, 8.64e15]);
    return record(`timestamp ${note.timestamp}`, note);
  },
  badUnion: (r, base) => {
    const note = { ...rawNote(base), source: null, nerModelVersion: null };
    const value = Buffer.from(singleObject(note));
    // The body ends with source's branch, the timestamp, and nerModelVersion's branch.
    const variant = pick(r, ['source', 'nerModelVersion'] as const);
    const at = variant === 'nerModelVersion' ? value.length - 1 : value.length - 2 - varintLength(note.timestamp);
    value[at] = pick(r, [1, 4, 0x7f]);
    return { what: `${variant} union branch byte ${value[at]}`, value, headers: [], expect: { code: 'UNDECODABLE' } };
  },
  hugeIds: (r) => {
    const bytes = pick(r, [100_000, 250_000, 290_000, MAX_NOTE_CHARS * 3]);
    return record(`note id, mention id and label of ${bytes} bytes each`, rawNote(hugeIdsNote(bytes)), 'linked');
  },
  keys: (r, base) => {
    const key = pick(r, [null, Buffer.alloc(0), Buffer.alloc(2_000_000, 0x6b), Buffer.from([0xff, 0xed, 0xa0, 0x80])]);
    // With a value that is dead-lettered too: a dead letter carries the key (cut when too large).
    const value = r() < 0.5 ? singleObject(rawNote(base)) : singleObject(rawNote(base)).subarray(0, 20);
    return { what: `key of ${key === null ? 'null' : `${key.length} bytes`}, value of ${value.length} bytes`, value, headers: [], key, expect: value.length === 20 ? 'dead' : 'linked' };
  },
  edgeSpans: (r, base) => {
    const text = base.text;
    const k = 1 + int(r, Math.min(10, text.length));
    const [start, end] = pick(r, [[0, k], [text.length - k, text.length], [0, text.length]] as [number, number][]);
    const note = rawNote(base);
    note.mentions = [{ id: 'edge', start, end, text: text.slice(start, end), label: 'Disease', score: 1 }];
    return record(`one mention at the note's edge [${start}, ${end})`, note, expectOf(note));
  },
  abbreviationChain: (r) => {
    const [levels, repeats] = [1 + int(r, 6), 1 + int(r, 46)];
    return record(`${levels} chained abbreviation definitions, the mention ${repeats} short forms`, rawNote(abbreviationChain(levels, repeats)), 'linked');
  },
  headers: (r, base) => {
    const headers: MutantRecord['headers'] = Array.from({ length: 1 + int(r, 4) }, () => [
      pick(r, ['traceparent', 'tracestate', 'cuilink-schema', '__proto__', 'constructor', 'toString', '', '\u0000', '😀']),
      pick(r, [null, '', '00-zz-zz-01', '\u0000'.repeat(55), `00-${'f'.repeat(32)}-${'f'.repeat(16)}-ff`, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', Buffer.from([0xff, 0x00, 0xed, 0xa0, 0x80]), 'x'.repeat(10_000)]),
    ]);
    return { what: `headers ${JSON.stringify(headers.map(([k, v]) => [k, typeof v === 'string' ? v.slice(0, 20) : v]))}`, value: singleObject(rawNote(base)), headers, expect: 'linked' };
  },
};

function varintLength(value: number | bigint): number {
  let n = BigInt(value) >= 0n ? BigInt(value) << 1n : (-BigInt(value) << 1n) - 1n;
  let bytes = 1;
  while ((n >>= 7n) > 0n) bytes++;
  return bytes;
}

export const MUTATION_NAMES = Object.keys(MUTATIONS);

/** Mutant number `index` of a run: a mutation and a base note drawn from `random`. */
export function mutant(random: Random): MutantRecord & { mutation: string; base: string } {
  const mutation = pick(random, MUTATION_NAMES);
  const base = pick(random, BASE_NOTES);
  return { ...MUTATIONS[mutation]!(random, base), mutation, base: base.noteId };
}
