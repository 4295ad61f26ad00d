import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Concept } from './concept.ts';
import { addSynonym, addUnique, compactConcept, detach, newConcept, setPreferredName } from './concept-builder.ts';
import { InputError, ParseError } from './errors.ts';
import { normalizeId } from './ids.ts';
import { readLines } from './line-reader.ts';
import { RrfFields } from './rrf-fields.ts';

export interface UmlsOptions {
  /** LAT values to keep (default `['ENG']`; an empty list keeps every language). */
  languages?: readonly string[];
  /** SAB allow-list for names and relations (default: every source). */
  sources?: readonly string[];
  /** TUI allow-list: concepts with none of these types are dropped (default: keep all). Needs MRSTY. */
  semanticTypes?: readonly string[];
  /** Keep rows with SUPPRESS in O, E, Y (default false: they are obsolete or suppressible names). */
  keepSuppressed?: boolean;
  /** MRSTY.RRF path; default the sibling of MRCONSO when it exists; `false` to skip. */
  mrsty?: string | false;
  /** MRREL.RRF path; default the sibling of MRCONSO when it exists; `false` to skip. */
  mrrel?: string | false;
}

// MRCONSO: CUI|LAT|TS|LUI|STT|SUI|ISPREF|AUI|SAUI|SCUI|SDUI|SAB|TTY|CODE|STR|SRL|SUPPRESS|CVF|
const C = { CUI: 0, LAT: 1, TS: 2, STT: 4, ISPREF: 6, SAB: 11, CODE: 13, STR: 14, SUPPRESS: 16 } as const;
const MRCONSO_FIELDS = 18;
// MRSTY: CUI|TUI|STN|STY|ATUI|CVF|
const MRSTY_FIELDS = 6;
// MRREL: CUI1|AUI1|STYPE1|REL|CUI2|AUI2|STYPE2|RELA|RUI|SRUI|SAB|SL|RG|DIR|SUPPRESS|CVF|
const R = { CUI1: 0, REL: 3, CUI2: 4, SAB: 10, SUPPRESS: 14 } as const;
const MRREL_FIELDS = 16;

/** Sources whose CODE is worth keeping as an xref (how other KBs and gold standards name the concept). */
const XREF_PREFIX: ReadonlyMap<string, string> = new Map([
  ['MSH', 'MESH'],
  ['OMIM', 'OMIM'],
  ['HPO', 'HP'],
  ['NCI', 'NCIT'],
  ['ICD10CM', 'ICD10CM'],
]);

/**
 * Loads UMLS concepts from MRCONSO.RRF (+ MRSTY.RRF types, + MRREL.RRF parents), streaming each
 * file once. Memory is one Concept per CUI and one string per distinct name of that CUI: rows are
 * read through a reused field index, names are detached from their line, TUIs are interned.
 */
export async function readUmls(mrconso: string, options: UmlsOptions = {}): Promise<Concept[]> {
  const languages = new Set(options.languages ?? ['ENG']);
  const sources = options.sources && options.sources.length > 0 ? new Set(options.sources) : undefined;
  const byCui = await readMrconso(mrconso, languages, sources, options.keepSuppressed ?? false);

  const mrsty = options.mrsty ?? sibling(mrconso, 'MRSTY');
  if (mrsty) await readMrsty(mrsty, byCui);
  if (options.semanticTypes && options.semanticTypes.length > 0) {
    if (!mrsty) throw new InputError(`a semantic type filter needs MRSTY.RRF next to ${mrconso}`, 'BAD_FLAGS');
    const allowed = new Set(options.semanticTypes);
    for (const [cui, concept] of byCui) {
      if (!concept.semanticTypes.some((t) => allowed.has(t))) byCui.delete(cui);
    }
  }

  const mrrel = options.mrrel ?? sibling(mrconso, 'MRREL');
  if (mrrel) await readMrrel(mrrel, byCui, sources, options.keepSuppressed ?? false);
  const concepts: Concept[] = [];
  for (const concept of byCui.values()) {
    compactConcept(concept);
    concepts.push(concept);
  }
  return concepts;
}

async function readMrconso(path: string, languages: Set<string>, sources: Set<string> | undefined, keepSuppressed: boolean) {
  const byCui = new Map<string, Concept>();
  // Concepts whose name is already the UMLS-preferred one (TS=P, STT=PF, ISPREF=Y).
  const preferred = new Set<Concept>();
  const row = new RrfFields(MRCONSO_FIELDS);
  for await (const line of readLines(path)) {
    if (line.text.length === 0) continue;
    if (row.reset(line.text) < MRCONSO_FIELDS) throw new ParseError(path, line.number, `expected ${MRCONSO_FIELDS} '|'-terminated fields (MRCONSO.RRF)`);
    if (languages.size > 0 && !languages.has(row.get(C.LAT))) continue;
    if (!keepSuppressed && isSuppressed(row.firstChar(C.SUPPRESS))) continue;
    const sab = row.get(C.SAB);
    if (sources && !sources.has(sab)) continue;
    const cui = row.get(C.CUI);
    if (cui.length === 0) throw new ParseError(path, line.number, 'empty CUI');
    const str = row.get(C.STR);
    // A blank string names nothing; kept, the index's concepts.jsonl would refuse it on reload.
    if (!/\S/.test(str)) continue;
    const isPreferred = row.is(C.TS, 'P') && row.is(C.STT, 'PF') && row.is(C.ISPREF, 'Y');
    let concept = byCui.get(cui);
    if (!concept) {
      concept = newConcept(detach(`UMLS:${cui}`), detach(str));
      byCui.set(cui, concept);
      if (isPreferred) preferred.add(concept);
    } else if (isPreferred && !preferred.has(concept)) {
      setPreferredName(concept, concept.synonyms.includes(str) ? str : detach(str));
      preferred.add(concept);
    } else {
      addSynonym(concept, str, detach);
    }
    const xrefPrefix = XREF_PREFIX.get(sab);
    if (xrefPrefix !== undefined) {
      const code = row.get(C.CODE);
      // OMIM allelic variants (601665.0001) and MeSH qualifiers (Q...) are not concepts; an
      // ICD-10-CM subcategory (E11.9) is. HPO writes its codes prefixed already (HP:0001250).
      if (code.length > 0 && !(sab === 'OMIM' && code.includes('.')) && !(sab === 'MSH' && code.charCodeAt(0) === 81)) {
        addUnique(concept.xrefs, normalizeId(code.startsWith(`${xrefPrefix}:`) ? code : `${xrefPrefix}:${code}`));
      }
    }
  }
  return byCui;
}

async function readMrsty(path: string, byCui: Map<string, Concept>): Promise<void> {
  const tuis = new Map<string, string>(); // ~130 TUIs: one string each, shared by millions of concepts
  const row = new RrfFields(MRSTY_FIELDS);
  for await (const line of readLines(path)) {
    if (line.text.length === 0) continue;
    if (row.reset(line.text) < MRSTY_FIELDS) throw new ParseError(path, line.number, `expected ${MRSTY_FIELDS} '|'-terminated fields (MRSTY.RRF)`);
    const concept = byCui.get(row.get(0));
    if (!concept) continue;
    const raw = row.get(1);
    let tui = tuis.get(raw);
    if (tui === undefined) tuis.set(raw, (tui = raw));
    addUnique(concept.semanticTypes, tui);
  }
}

/**
 * Parents from MRREL. UMLS reads a row as "CUI2 is REL of CUI1" (Reference Manual, MRREL: "REL —
 * relationship of second concept or atom to first concept or atom"), so `CUI1|…|PAR|CUI2` says
 * CUI2 is a parent of CUI1, and `RB` says CUI2 is broader than CUI1: both make CUI2 a parent of
 * CUI1. CHD/RN are the inverse rows of the same pairs and are not needed.
 */
async function readMrrel(path: string, byCui: Map<string, Concept>, sources: Set<string> | undefined, keepSuppressed: boolean): Promise<void> {
  const row = new RrfFields(MRREL_FIELDS);
  for await (const line of readLines(path)) {
    if (line.text.length === 0) continue;
    if (row.reset(line.text) < MRREL_FIELDS) throw new ParseError(path, line.number, `expected ${MRREL_FIELDS} '|'-terminated fields (MRREL.RRF)`);
    if (!row.is(R.REL, 'PAR') && !row.is(R.REL, 'RB')) continue;
    if (!keepSuppressed && isSuppressed(row.firstChar(R.SUPPRESS))) continue;
    if (sources && !sources.has(row.get(R.SAB))) continue;
    const child = byCui.get(row.get(R.CUI1));
    const parent = byCui.get(row.get(R.CUI2));
    // Reuse the parent's own id string: millions of parent links, one string per concept.
    if (child && parent && child !== parent) addUnique(child.parents, parent.id);
  }
}

/** SUPPRESS O (obsolete), E (editor-suppressed), Y (suppressible); N is live. */
function isSuppressed(flag: number): boolean {
  return flag === 79 /* O */ || flag === 69 /* E */ || flag === 89 /* Y */;
}

/** `MRSTY.RRF` (or `.RRF.gz`) in the directory of MRCONSO, if present. */
function sibling(mrconso: string, table: string): string | undefined {
  const dir = dirname(mrconso);
  for (const name of [`${table}.RRF`, `${table}.RRF.gz`]) {
    const path = join(dir, name);
    if (existsSync(path)) return path;
  }
  return undefined;
}
