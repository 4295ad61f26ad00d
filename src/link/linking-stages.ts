import type { CandidateSource, NameLookup } from '../retrieve/candidate-retriever.ts';
import type { LooseMatchTable } from '../retrieve/loose-match-table.ts';
import type { XrefNameTable } from '../retrieve/xref-name-table.ts';
import type { ExactMatchTable } from '../retrieve/exact-match-table.ts';
import { hereditaryReading } from '../text/loose-key.ts';
import type { LinkConfig } from './link-config.ts';

/**
 * Every stage of linking, in the order it runs: the one place the cascade is declared. A stage
 * that `produces` candidates names them (`via` on a candidate and on a link); the others reorder,
 * filter or decide. `switch` is the link-config key that turns it off, and only it: no stage
 * depends on another's switch. (`query.loose` is also the loose key itself: with it off, the
 * composite readings and inventory senses, still on, are looked up by exact name only.) The name
 * lookups (exact … unqualified) form a cascade: the first with a hit ends it; composite readings
 * are looked up only when none of them matched.
 *
 * `kept`: what each rule is worth on the tune split of NCBI-disease train (its switch off, the
 * rest default: bench/results/accuracy-ablation.json, and for the rules within the noise the
 * learn part too, bench/results/stage-ablation.txt), and why a rule within the noise of 4
 * mentions stays.
 */
export const LINKING_STAGES = [
  { name: 'exact', produces: true, switch: null, what: "the mention's own text is a KB name (normalizeName)" },
  { name: 'abbreviation', produces: true, switch: 'abbreviations', what: 'an in-note short form read as its long form, which is a KB name', kept: 'tune −15 mentions without the in-mention/nested/initials forms (accuracy-ablation.json)' },
  { name: 'loose', produces: true, switch: 'query.loose', what: 'a KB name under the looser key (plurals, spelling, word order, numerals)', kept: 'tune −15 without it' },
  { name: 'xref', produces: true, switch: 'query.xrefNames', what: "another vocabulary's name for a KB concept (index build --xref-names)", kept: 'tune −5 without it, none gained' },
  { name: 'head-noun', produces: true, switch: 'query.headNouns', what: 'an eponym with "disease"/"syndrome" added, loose key', kept: 'off by default: tune +0, learn +1 / −0 (within the noise); the switch stays for KBs whose eponyms carry their head noun' },
  { name: 'inheritance', produces: true, switch: 'query.inheritance', what: 'a mode of inheritance read as "hereditary", loose key', kept: 'tune −6 without it, none gained' },
  { name: 'unqualified', produces: true, switch: 'query.unqualified', what: 'a KB name that differs only by qualifier words', kept: 'tune +6 / −3 (net within the noise) but learn +33 / −10: train as a whole (5,134 mentions) is the better evidence' },
  { name: 'composite', produces: true, switch: 'query.composite', what: 'a distributed reading of a coordination ("breast and ovarian cancer")', kept: 'tune ±0, learn +6 / −2; CompositeMention output is part of the contract of issue 14' },
  { name: 'dense', produces: true, switch: null, what: 'nearest KB names of the bi-encoder vector (HNSW)' },
  { name: 'inventory', produces: true, switch: 'query.abbreviationInventory', what: 'a sense of an undefined short form from the clinical inventory', kept: 'off by default: ±0 on tune (clinical notes, not abstracts, are its use)' },
  { name: 'sparse', produces: false, switch: 'query.sparseWeight', what: 'dense scores fused with character-trigram TF-IDF', kept: 'tune −5 without it' },
  { name: 'hierarchy', produces: false, switch: 'hierarchy.penalty', what: 'ties between name matches: preferred name, ancestor', kept: 'never fires on MEDIC / NCBI-disease (±0 on tune and learn); kept for KBs where a parent and a child share a synonym, where the alternative is concept order' },
  { name: 'memory', produces: true, switch: '--memory', what: 'labelled mentions vote; a majority decides the link' },
  { name: 'rerank', produces: false, switch: 'rerank.policy', what: 'the cross-encoder reorders ambiguous lists', kept: 'tune −18 without it' },
  { name: 'type-filter', produces: false, switch: 'typeFilter', what: 'NER label → allowed semantic types (applied inside every lookup and search)' },
  { name: 'confidence', produces: false, switch: '--calibration', what: 'the calibrated probability that the top-1 is right' },
  { name: 'nil', produces: false, switch: 'nil.inKb', what: 'a link whose concept is probably not in the KB (P(in KB) under nil.inKb; also confidence under nil.confidence when set) is NIL, candidates kept' },
] as const;

/** The `via` values, in cascade order (the candidate-producing stages). */
export const CANDIDATE_SOURCES: readonly CandidateSource[] = LINKING_STAGES.filter((s) => s.produces).map((s) => s.name as CandidateSource);

const DISJUNCTION = /\bor\b/i;

export interface NameLookupTables {
  exact: ExactMatchTable;
  loose?: LooseMatchTable;
  xrefNames?: XrefNameTable;
}

/**
 * The name lookups after the exact table, in LINKING_STAGES order, each present only when its own
 * switch is on (the loose table serves several of them; `query.loose: false` turns off the loose
 * lookup alone).
 */
export function nameLookups(tables: NameLookupTables, query: Pick<LinkConfig['query'], 'loose' | 'xrefNames' | 'headNouns' | 'inheritance' | 'unqualified'>): NameLookup[] {
  const { loose, xrefNames } = tables;
  const out: NameLookup[] = [];
  if (loose && query.loose) out.push({ via: 'loose', lookup: (t) => loose.lookup(t) });
  // After every KB-name lookup (strict, loose), before the head-noun and qualifier chances: on the
  // tune split the same links as before the loose key; after every loose chance, two learn mentions fewer.
  if (xrefNames && query.xrefNames) out.push({ via: 'xref', lookup: (t) => xrefNames.lookup(t) });
  if (loose && query.headNouns.length > 0) {
    const heads = query.headNouns;
    out.push({ via: 'head-noun', texts: (qs) => qs.flatMap((q) => heads.map((h) => `${q} ${h}`)), lookup: (t) => loose.lookup(t) });
  }
  // Mention side only: KB names keep their mode, so "hereditary deafness" never becomes "Deafness, Autosomal Recessive".
  if (loose && query.inheritance) out.push({ via: 'inheritance', texts: (qs) => qs.flatMap((q) => hereditaryReading(q) ?? []), lookup: (t) => loose.lookup(t) });
  // Never for a disjunction: "breast or ovarian cancer" names two diseases.
  if (loose && query.unqualified) out.push({ via: 'unqualified', texts: (qs) => (qs.some((q) => DISJUNCTION.test(q)) ? [] : qs), lookup: (t) => loose.lookupUnqualified(t) });
  return out;
}

/** How a composite reading or an inventory sense is looked up: the exact table, then the loose key when on. */
export function phraseLookups(tables: NameLookupTables, looseOn: boolean): ((text: string) => readonly number[])[] {
  const { exact, loose } = tables;
  return loose && looseOn ? [(t) => exact.lookup(t), (t) => loose.lookup(t)] : [(t) => exact.lookup(t)];
}

/** Whether any switch needs the loose-key table. */
export function needsLooseTable(query: LinkConfig['query']): boolean {
  return query.loose || query.headNouns.length > 0 || query.inheritance || query.unqualified;
}
