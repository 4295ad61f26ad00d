import { int, pick } from './guarded-fuzz.ts';
import { mutateJson } from './input-mutations.ts';

/**
 * KB files of hostile shapes for the KB input fuzz (test/unit/kb/kb-input-fuzz.test.ts): is-a
 * chains 100k deep, cycles, self-parents, duplicate ids, empty names, odd ids, 100k synonyms or
 * parents on one concept, written in each format the loaders read.
 */

type Random = () => number;

/** A concept as a shape states it, before a format writes it. */
export interface ShapeConcept {
  id: string;
  name: string;
  synonyms: string[];
  parents: string[];
  altIds: string[];
}

export type KbFileFormat = 'obo' | 'jsonl' | 'ctd' | 'biosyn' | 'obograph' | 'umls';
export const KB_FILE_FORMATS: readonly KbFileFormat[] = ['obo', 'jsonl', 'ctd', 'biosyn', 'obograph', 'umls'];

/** Ids a hand edit or another tool's export can hold. */
const ODD_IDS: readonly string[] = ['', ' ', ':', 'a:', ':b', 'HP_', 'http://purl.obolibrary.org/obo/', 'http://purl.obolibrary.org/obo/HP_', 'ID WITH SPACE', 'é:1', '\u0000', 'x|y', 'a\tb', '"q"', '!', '{x}', 'DO:DOID:', 'MESH:', '\\', 'C1234567', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'A:'.repeat(2000), '\ud800'];
const ODD_NAMES: readonly string[] = ['', ' ', '\t', '!', '"', '\\', '{', 'é', '\u0000', '\ud800', 'x'.repeat(100_000), '[Term]', 'a||b', 'a|b'];

function concept(id: string, name: string, parents: string[] = []): ShapeConcept {
  return { id, name, synonyms: [], parents, altIds: [] };
}

/** A size: mostly small, sometimes 10k, rarely 100k. */
function size(random: Random): number {
  const r = random();
  return r < 0.7 ? 1 + int(random, 20) : r < 0.93 ? 1000 + int(random, 9000) : 100_000;
}

const SHAPES: readonly ((random: Random, n: number) => { what: string; concepts: ShapeConcept[] })[] = [
  (_random, n) => ({ what: `is-a chain ${n} deep`, concepts: Array.from({ length: n }, (_, i) => concept(`T:${i}`, `term ${i}`, i === 0 ? [] : [`T:${i - 1}`])) }),
  (_random, n) => ({ what: `is-a cycle of ${n}`, concepts: Array.from({ length: n }, (_, i) => concept(`T:${i}`, `term ${i}`, [`T:${(i + 1) % n}`])) }),
  (random, n) => {
    const edges = 1 + int(random, 4);
    return { what: `random is-a graph of ${n} with ${edges} parents each`, concepts: Array.from({ length: n }, (_, i) => concept(`T:${i}`, `term ${i}`, Array.from({ length: edges }, () => `T:${int(random, n)}`))) };
  },
  () => {
    const self = concept('T:1', 'self parent', ['T:1']);
    self.altIds.push('T:1', 'T:2');
    const other = concept('T:2', 'alt of the other', ['T:1']);
    other.altIds.push('T:1');
    return { what: 'self-parents and alt ids naming each other', concepts: [self, other, concept('T:3', 'child', ['T:2', 'T:1', 'T:3'])] };
  },
  (_random, n) => ({ what: `one id ${n} times`, concepts: Array.from({ length: n }, (_, i) => ({ ...concept('T:1', `name ${i % 7}`, [`T:${i % 5}`]), synonyms: [`syn ${i}`], altIds: [`T:alt${i % 3}`] })) }),
  (_random, n) => {
    const one = concept('T:1', 'many names');
    one.synonyms = Array.from({ length: n }, (_, i) => (i % 10 === 9 ? 'many names' : `synonym ${i}`));
    return { what: `${n} synonyms on one concept`, concepts: [one] };
  },
  (_random, n) => {
    const parents = Array.from({ length: n }, (_, i) => `T:p${i % Math.max(1, n - 3)}`);
    return { what: `${n} parents on one concept`, concepts: [concept('T:1', 'many parents', parents), ...parents.slice(0, 50).map((p) => concept(p, `parent ${p}`, ['T:1']))] };
  },
  (_random, n) => ({ what: `${n} concepts, each naming the next one's id as an alt id`, concepts: Array.from({ length: n }, (_, i) => ({ ...concept(`T:${i}`, `term ${i}`, i > 0 ? [`T:${i - 1}`] : []), altIds: [`T:${i + 1}`] })) }),
  (_random, n) => ({ what: `a star of ${n} children`, concepts: [concept('T:root', 'root'), ...Array.from({ length: n }, (_, i) => concept(`T:${i}`, `leaf ${i}`, ['T:root']))] }),
  (random) => {
    const ids = Array.from({ length: 1 + int(random, 6) }, () => pick(random, ODD_IDS));
    return { what: `odd ids ${JSON.stringify(ids).slice(0, 80)}`, concepts: ids.map((id, i) => ({ ...concept(id, `odd ${i}`, [pick(random, ODD_IDS)]), altIds: [pick(random, ODD_IDS)], synonyms: [pick(random, ODD_NAMES)] })) };
  },
  (random) => {
    const names = Array.from({ length: 1 + int(random, 6) }, () => pick(random, ODD_NAMES));
    return { what: `odd names ${JSON.stringify(names).slice(0, 80)}`, concepts: names.map((name, i) => ({ ...concept(`T:${i}`, name, i > 0 ? ['T:0'] : []), synonyms: [pick(random, ODD_NAMES)] })) };
  },
];

/** Shapes whose size is chosen (the others hold a handful of odd ids or names). */
export const SIZED_SHAPES = SHAPES.length - 2;

/** A hostile shape, as concepts: a random one of a random size, or shape `extreme` at 100k. */
export function kbShape(random: Random, extreme?: number): { what: string; concepts: ShapeConcept[] } {
  if (extreme !== undefined) return SHAPES[extreme]!(random, 100_000);
  return pick(random, SHAPES)(random, size(random));
}

const CTD_HEADER = '# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings\n';

/** An id as a CUI for MRCONSO (`C` + 7 digits), stable per id. */
function cuiOf(id: string, cuis: Map<string, string>): string {
  let cui = cuis.get(id);
  if (cui === undefined) cuis.set(id, (cui = `C${String(cuis.size).padStart(7, '0')}`));
  return cui;
}

/** The files (name → content) that hold the concepts in a format; the first is the one to load. */
export function renderKb(format: KbFileFormat, concepts: readonly ShapeConcept[]): [string, string][] {
  switch (format) {
    case 'obo':
      return [['kb.obo', `format-version: 1.2\n\n${concepts.map((c) => `[Term]\nid: ${c.id}\nname: ${c.name}\n${c.synonyms.map((s) => `synonym: "${s}" EXACT []\n`).join('')}${c.altIds.map((a) => `alt_id: ${a}\n`).join('')}${c.parents.map((p) => `is_a: ${p} ! parent\n`).join('')}`).join('\n')}`]];
    case 'jsonl':
      return [['kb.jsonl', concepts.map((c) => `${JSON.stringify(c)}\n`).join('')]];
    case 'ctd':
      return [['kb.tsv', CTD_HEADER + concepts.map((c) => `${c.name}\t${c.id}\t${c.altIds.join('|')}\t\t${c.parents.join('|')}\t\t\t${c.synonyms.join('|')}\t\n`).join('')]];
    case 'biosyn':
      return [['kb.txt', concepts.map((c) => `${[c.id, ...c.altIds].join('|')}||${[c.name, ...c.synonyms].join('|')}\n`).join('')]];
    case 'obograph': {
      const iri = (id: string) => `http://purl.obolibrary.org/obo/${id.replace(':', '_')}`;
      const nodes = concepts.map((c) => ({ id: iri(c.id), lbl: c.name, type: 'CLASS', meta: { synonyms: c.synonyms.map((val) => ({ pred: 'hasExactSynonym', val })), basicPropertyValues: c.altIds.map((val) => ({ pred: 'http://www.geneontology.org/formats/oboInOwl#hasAlternativeId', val })) } }));
      const edges = concepts.flatMap((c) => c.parents.map((p) => ({ sub: iri(c.id), pred: 'is_a', obj: iri(p) })));
      return [['kb.json', JSON.stringify({ graphs: [{ id: 'kb', nodes, edges }] })]];
    }
    case 'umls': {
      const cuis = new Map<string, string>();
      const conso = concepts.flatMap((c) => [c.name, ...c.synonyms].map((name, i) => `${cuiOf(c.id, cuis)}|ENG|${i === 0 ? 'P' : 'S'}|L1|PF|S1|Y|A1||||MSH|MH|D000001|${name}|0|N||\n`));
      const rel = concepts.flatMap((c) => c.parents.map((p) => `${cuiOf(c.id, cuis)}||CUI|PAR|${cuiOf(p, cuis)}||CUI||R1||MSH|MSH|||N||\n`));
      const sty = concepts.map((c) => `${cuiOf(c.id, cuis)}|T047|B2|Disease or Syndrome|AT1||\n`);
      return [
        ['MRCONSO.RRF', conso.join('')],
        ['MRREL.RRF', rel.join('')],
        ['MRSTY.RRF', sty.join('')],
      ];
    }
  }
}

/** A JSONL concept line or OBO-Graph document with one JSON value mutated (wrong types, deep nesting, `__proto__` keys). */
export function mutateKbJson(random: Random, format: 'jsonl' | 'obograph', valid: string): { what: string; text: string } {
  if (format === 'obograph') return mutateJson(random, JSON.parse(valid));
  const lines = valid.split('\n').filter((l) => l.trim().length > 0);
  const at = int(random, lines.length);
  const mutated = mutateJson(random, JSON.parse(lines[at]!));
  lines[at] = mutated.text.replaceAll('\n', ' ');
  return { what: `line ${at + 1}: ${mutated.what}`, text: `${lines.join('\n')}\n` };
}
