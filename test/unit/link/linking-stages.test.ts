import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Concept } from '../../../src/kb/concept.ts';
import { CANDIDATE_SOURCES, LINKING_STAGES, nameLookups, needsLooseTable, phraseLookups, type NameLookupTables } from '../../../src/link/linking-stages.ts';
import { parseLinkConfig } from '../../../src/link/link-config.ts';
import { ExactMatchTable } from '../../../src/retrieve/exact-match-table.ts';
import { LooseMatchTable } from '../../../src/retrieve/loose-match-table.ts';
import { XrefNameTable } from '../../../src/retrieve/xref-name-table.ts';
import type { NameLookup } from '../../../src/retrieve/candidate-retriever.ts';
import { looseKey, unqualifiedKey } from '../../../src/text/loose-key.ts';
import { normalizeName } from '../../../src/text/normalize.ts';

const concept = (id: string, name: string, synonyms: string[] = [], xrefNames?: string[]): Concept => ({
  id,
  name,
  synonyms,
  semanticTypes: ['T047'],
  parents: [],
  xrefs: [],
  altIds: [],
  ...(xrefNames ? { xrefNames } : {}),
});

const CONCEPTS = [
  concept('MESH:D006623', 'Von Hippel-Lindau Disease', ['VHL disease']),
  concept('MESH:D030342', 'Hereditary Diseases', ['Genetic Diseases, Inborn']),
  concept('MESH:D061325', 'Hereditary Breast and Ovarian Cancer Syndrome'),
  concept('MESH:D001932', 'Brain Tumor', ['Brain Neoplasms']),
  concept('MESH:D007674', 'Kidney Diseases', [], ['nephropathy', 'brain neoplasms']),
];
const idOf = (i: number) => CONCEPTS[i]!.id;

const exact = ExactMatchTable.fromConcepts(CONCEPTS, normalizeName);
const loose = new LooseMatchTable(CONCEPTS, looseKey, unqualifiedKey);
const xrefNames = new XrefNameTable(CONCEPTS, (name) => exact.lookup(name).length > 0, normalizeName, looseKey);
const ALL_TABLES: NameLookupTables = { exact, loose, xrefNames };

const DEFAULT_QUERY = parseLinkConfig({}).query;
const ALL_ON = { loose: true, xrefNames: true, headNouns: ['disease', 'syndrome'], inheritance: true, unqualified: true };

const vias = (lookups: readonly NameLookup[]) => lookups.map((l) => l.via);
const stage = (lookups: readonly NameLookup[], via: string) => {
  const found = lookups.find((l) => l.via === via);
  assert.ok(found, `no ${via} lookup`);
  return found;
};
/** What a lookup stage finds for a mention: its texts (or the mention itself), looked up, as concept ids. */
const finds = (lookup: NameLookup, mention: string) => [...new Set((lookup.texts ? lookup.texts([mention]) : [mention]).flatMap((t) => [...lookup.lookup(t)]))].map(idOf);

test('LINKING_STAGES names are unique and in cascade order', () => {
  const names = LINKING_STAGES.map((s) => s.name);
  assert.equal(new Set(names).size, names.length);
  assert.deepEqual(names.slice(0, 9), ['exact', 'abbreviation', 'loose', 'xref', 'head-noun', 'inheritance', 'unqualified', 'composite', 'dense']);
  for (const later of ['inventory', 'memory', 'rerank', 'nil']) assert.ok(names.indexOf(later as never) > names.indexOf('dense'), later);
});

test('each stage switch is its own, and a link-config switch names a real config key', () => {
  const switches = LINKING_STAGES.map((s) => s.switch).filter((s): s is NonNullable<typeof s> => s !== null);
  assert.equal(new Set(switches).size, switches.length);
  const config = parseLinkConfig({}) as unknown as Record<string, unknown>;
  for (const key of switches.filter((s) => !s.startsWith('--'))) {
    let at: unknown = config;
    for (const part of key.split('.')) {
      assert.ok(at !== null && typeof at === 'object' && part in at, `${key} is not a link-config key`);
      at = (at as Record<string, unknown>)[part];
    }
  }
});

test('CANDIDATE_SOURCES are the producing stages in stage order', () => {
  assert.deepEqual([...CANDIDATE_SOURCES], LINKING_STAGES.filter((s) => s.produces).map((s) => s.name));
  assert.deepEqual(CANDIDATE_SOURCES.slice(0, 9), ['exact', 'abbreviation', 'loose', 'xref', 'head-noun', 'inheritance', 'unqualified', 'composite', 'dense']);
  assert.ok(CANDIDATE_SOURCES.includes('memory'));
  assert.ok(!CANDIDATE_SOURCES.includes('rerank' as never));
  assert.ok(!CANDIDATE_SOURCES.includes('nil' as never));
});

test('nameLookups gives loose, xref, head-noun, inheritance, unqualified when all are on; the defaults leave head nouns off', () => {
  const order = ['loose', 'xref', 'head-noun', 'inheritance', 'unqualified'];
  assert.deepEqual(vias(nameLookups(ALL_TABLES, ALL_ON)), order);
  assert.deepEqual(vias(nameLookups(ALL_TABLES, DEFAULT_QUERY)), order.filter((v) => v !== 'head-noun'));
});

test('turning off one switch removes only its stage', () => {
  const all = ['loose', 'xref', 'head-noun', 'inheritance', 'unqualified'];
  const cases: [string, Partial<typeof ALL_ON>][] = [
    ['loose', { loose: false }],
    ['xref', { xrefNames: false }],
    ['head-noun', { headNouns: [] }],
    ['inheritance', { inheritance: false }],
    ['unqualified', { unqualified: false }],
  ];
  for (const [via, off] of cases) {
    assert.deepEqual(vias(nameLookups(ALL_TABLES, { ...ALL_ON, ...off })), all.filter((v) => v !== via), via);
  }
  // The loose lookup off keeps the rules that share its table, and they still find their concepts.
  const noLoose = nameLookups(ALL_TABLES, { ...ALL_ON, loose: false });
  assert.deepEqual(finds(stage(noLoose, 'head-noun'), 'von Hippel-Lindau'), ['MESH:D006623']);
  assert.deepEqual(finds(stage(noLoose, 'unqualified'), 'breast and ovarian cancer'), ['MESH:D061325']);
  assert.deepEqual(vias(nameLookups(ALL_TABLES, { loose: false, xrefNames: false, headNouns: [], inheritance: false, unqualified: false })), []);
});

test('without a loose table only the xref lookup can remain; without an xref table it is left out', () => {
  assert.deepEqual(vias(nameLookups({ exact, xrefNames }, ALL_ON)), ['xref']);
  assert.deepEqual(vias(nameLookups({ exact }, ALL_ON)), []);
  assert.deepEqual(vias(nameLookups({ exact, loose }, ALL_ON)), ['loose', 'head-noun', 'inheritance', 'unqualified']);
});

test('each lookup finds its concept', () => {
  const lookups = nameLookups(ALL_TABLES, ALL_ON);
  assert.deepEqual(finds(stage(lookups, 'loose'), 'brain tumours'), ['MESH:D001932']);
  assert.deepEqual(finds(stage(lookups, 'loose'), 'von Hippel-Lindau'), [], 'no head noun in the loose lookup');
  assert.deepEqual(finds(stage(lookups, 'xref'), 'nephropathy'), ['MESH:D007674']);
  assert.deepEqual(finds(stage(lookups, 'xref'), 'brain neoplasms'), [], 'an xref name that is a KB name is left out');

  const headNoun = stage(lookups, 'head-noun');
  const texts = headNoun.texts!(['von Hippel-Lindau']);
  assert.ok(texts.includes('von Hippel-Lindau disease'), `${texts}`);
  assert.ok(texts.includes('von Hippel-Lindau syndrome'), `${texts}`);
  assert.deepEqual([...headNoun.lookup('von Hippel-Lindau disease')].map(idOf), ['MESH:D006623']);
  assert.equal(CONCEPTS[headNoun.lookup('von Hippel-Lindau disease')[0]!]!.name, 'Von Hippel-Lindau Disease');
  const oneHead = stage(nameLookups(ALL_TABLES, { ...ALL_ON, headNouns: ['syndrome'] }), 'head-noun');
  assert.deepEqual(oneHead.texts!(['von Hippel-Lindau']), ['von Hippel-Lindau syndrome']);
  assert.deepEqual(finds(oneHead, 'von Hippel-Lindau'), []);

  const inheritance = stage(lookups, 'inheritance');
  assert.deepEqual(inheritance.texts!(['autosomal recessive disorder']), ['hereditary disorder']);
  assert.deepEqual(inheritance.texts!(['muscular dystrophy']), [], 'no mode of inheritance: nothing to look up');
  assert.deepEqual(finds(inheritance, 'autosomal recessive disorder'), ['MESH:D030342']);

  const unqualified = stage(lookups, 'unqualified');
  assert.deepEqual(unqualified.texts!(['breast and ovarian cancer']), ['breast and ovarian cancer']);
  assert.deepEqual(finds(unqualified, 'breast and ovarian cancer'), ['MESH:D061325']);
  assert.deepEqual(unqualified.texts!(['breast or ovarian cancer']), [], 'never for a disjunction');
  assert.deepEqual(unqualified.texts!(['breast cancer', 'breast or ovarian cancer']), []);
});

test('phraseLookups: the exact table, then the loose key when it is on', () => {
  const on = phraseLookups(ALL_TABLES, true);
  assert.equal(on.length, 2);
  assert.deepEqual([...on[0]!('Brain Tumor')].map(idOf), ['MESH:D001932']);
  assert.deepEqual([...on[0]!('brain tumours')], []);
  assert.deepEqual([...on[1]!('brain tumours')].map(idOf), ['MESH:D001932']);
  assert.equal(phraseLookups(ALL_TABLES, false).length, 1);
  assert.equal(phraseLookups({ exact }, true).length, 1);
});

test('needsLooseTable is true when any loose-table switch is on, false when all are off', () => {
  const allOff = { ...DEFAULT_QUERY, loose: false, headNouns: [], inheritance: false, unqualified: false };
  assert.equal(needsLooseTable(allOff), false);
  assert.equal(needsLooseTable({ ...allOff, xrefNames: true, composite: true }), false, 'xref and composite do not need it');
  assert.equal(needsLooseTable({ ...allOff, loose: true }), true);
  assert.equal(needsLooseTable({ ...allOff, headNouns: ['disease'] }), true);
  assert.equal(needsLooseTable({ ...allOff, inheritance: true }), true);
  assert.equal(needsLooseTable({ ...allOff, unqualified: true }), true);
  assert.equal(needsLooseTable(DEFAULT_QUERY), true);
});
