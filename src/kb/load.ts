import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import type { Concept } from './concept.ts';
import { addUnique } from './concept-builder.ts';
import { ConceptStore } from './concept-store.ts';
import { readBiosynDictionary } from './biosyn-loader.ts';
import { readCtdDiseases } from './ctd-loader.ts';
import { InputError } from './errors.ts';
import { normalizeId } from './ids.ts';
import { readConceptJsonl } from './jsonl-loader.ts';
import { detectKbFormat, KB_FORMATS, UMLS_SIDE_TABLE, type KbFormat } from './kb-format.ts';
import { readObo } from './obo-loader.ts';
import { readOboGraph } from './obograph-loader.ts';
import type { SynonymScope } from './synonym-scope.ts';
import { readUmls, type UmlsOptions } from './umls-loader.ts';

export interface KbLoadOptions {
  /** Loader for every file; by default each file's format is detected from its name and content. */
  format?: KbFormat;
  /** OBO / OBO-Graph synonym scopes kept as names (default EXACT and RELATED). */
  synonymScopes?: readonly SynonymScope[];
  /** UMLS filters (languages, SABs, TUIs, suppression). */
  umls?: UmlsOptions;
  /**
   * Files of an older (or other) release read after the KB: a concept of theirs is added only when
   * neither its id nor any alt id is known by then, so ids a later release retired stay linkable
   * (gold labels made against the older release) and nothing the KB already has changes.
   */
  supplements?: readonly string[];
  /**
   * Other vocabularies read last for their names only: a concept of theirs whose id and
   * cross-references (xrefs, alt ids) lead to exactly one KB concept gives that concept its names
   * as `xrefNames` (DOID's "nephropathy" → MeSH Kidney Diseases); names the concept already has are
   * skipped. Nothing else of theirs is kept: no concept, parent or synonym is added.
   */
  xrefNameSources?: readonly string[];
  /** Called after each file with its concept count (progress for the CLI); for a supplement, the concepts added; for an xref-name source, the KB concepts given names. */
  onFile?: (path: string, format: KbFormat, concepts: number) => void;
}

/**
 * Loads one or more KB files into one store; a concept id seen in several files is merged (names,
 * parents, xrefs united). Missing files are an InputError before anything is read; malformed
 * lines a ParseError naming file and line.
 */
export async function loadKb(paths: readonly string[], options: KbLoadOptions = {}): Promise<ConceptStore> {
  if (paths.length === 0) throw new InputError('no KB file given', 'BAD_FLAGS');
  if (options.format !== undefined && !KB_FORMATS.includes(options.format)) {
    throw new InputError(`unknown KB format '${String(options.format)}' (one of ${KB_FORMATS.join(', ')})`, 'BAD_FLAGS');
  }
  const supplements = options.supplements ?? [];
  const xrefNameSources = options.xrefNameSources ?? [];
  for (const path of [...paths, ...supplements, ...xrefNameSources]) {
    if (!existsSync(path)) throw new InputError(`cannot read ${path}: no such file`, 'INPUT_NOT_FOUND');
  }
  const sideTables = options.format === undefined && paths.some((p) => /MRCONSO\.RRF(\.gz)?$/i.test(p)) ? paths.filter((p) => UMLS_SIDE_TABLE.test(basename(p))) : [];
  const mainOptions = sideTables.length > 0 ? withSideTables(options, sideTables) : options;
  // MRSTY/MRREL passed with MRCONSO (a shell glob) are read through MRCONSO.
  const mainPaths = paths.filter((p) => !sideTables.includes(p));
  // Every format is known before the first file is read, so that an option no file reads is refused
  // up front rather than after minutes of loading (or never).
  const formats = new Map<string, KbFormat>();
  for (const path of [...mainPaths, ...supplements, ...xrefNameSources]) {
    if (!formats.has(path)) formats.set(path, options.format ?? (await detectKbFormat(path)));
  }
  refuseUnreadOptions(options, formats);
  const formatOf = (path: string): KbFormat => formats.get(path)!;
  const store = new ConceptStore();
  for (const path of mainPaths) {
    const format = formatOf(path);
    let count = 0;
    for await (const concept of readSome(path, format, mainOptions)) {
      store.add(concept);
      count++;
    }
    options.onFile?.(path, format, count);
  }
  for (const path of supplements) {
    const format = formatOf(path);
    // Judged against the store before this file: two lines of one supplement may share an id.
    const retired = [];
    for await (const concept of readSome(path, format, options)) {
      if (!store.has(concept.id) && !concept.altIds.some((alt) => store.has(alt))) retired.push(concept);
    }
    for (const concept of retired) store.add(concept);
    options.onFile?.(path, format, retired.length);
  }
  const shared = xrefNameSources.length > 0 ? sharedAltIds(store) : new Set<string>();
  for (const path of xrefNameSources) {
    const format = formatOf(path);
    const named = new Set<string>();
    for await (const source of readSome(path, format, options)) {
      const target = soleTarget(store, source, shared);
      if (target === undefined) continue;
      const own = new Set([target.name, ...target.synonyms].map((n) => n.toLowerCase()));
      for (const name of [source.name, ...source.synonyms]) {
        if (own.has(name.toLowerCase())) continue;
        addUnique((target.xrefNames ??= []), name);
        named.add(target.id);
      }
    }
    options.onFile?.(path, format, named.size);
  }
  return store;
}

/**
 * Options that only some loaders read, by the flag that sets them: given for a KB with no file of
 * those formats, they would filter nothing while the user believes they did (--umls-tui T047 on an
 * OBO file exports every disease).
 */
const FORMAT_SCOPED_OPTIONS: readonly { flag: string; formats: readonly KbFormat[]; given: (options: KbLoadOptions) => boolean }[] = [
  { flag: '--umls-lang', formats: ['umls'], given: (o) => o.umls?.languages !== undefined },
  { flag: '--umls-sab', formats: ['umls'], given: (o) => o.umls?.sources !== undefined },
  { flag: '--umls-tui', formats: ['umls'], given: (o) => o.umls?.semanticTypes !== undefined },
  { flag: '--umls-keep-suppressed', formats: ['umls'], given: (o) => o.umls?.keepSuppressed === true },
  { flag: '--all-synonyms', formats: ['obo', 'obograph'], given: (o) => o.synonymScopes !== undefined },
];

/** InputError naming the first given option that no file's loader reads, and each file's format. */
function refuseUnreadOptions(options: KbLoadOptions, formats: ReadonlyMap<string, KbFormat>): void {
  const present = new Set(formats.values());
  for (const scoped of FORMAT_SCOPED_OPTIONS) {
    if (!scoped.given(options) || scoped.formats.some((f) => present.has(f))) continue;
    const found = [...formats].map(([path, format]) => `${path}: ${format}`).join(', ');
    throw new InputError(`${scoped.flag} applies to ${scoped.formats.join(', ')} files only, and no KB file is one (${found})`, 'BAD_FLAGS');
  }
}

/**
 * The UMLS options with MRSTY/MRREL paths given among the KB files: they may sit in another
 * directory than MRCONSO (a subset written elsewhere), where the sibling lookup would miss them.
 */
function withSideTables(options: KbLoadOptions, sideTables: readonly string[]): KbLoadOptions {
  const pick = (table: string): string | undefined => {
    const given = sideTables.filter((p) => basename(p).toUpperCase().startsWith(`${table}.`));
    if (given.length > 1) throw new InputError(`more than one ${table}.RRF given: ${given.join(', ')}`, 'BAD_FLAGS');
    return given[0];
  };
  const umls = options.umls ?? {};
  return { ...options, umls: { ...umls, mrsty: umls.mrsty ?? pick('MRSTY'), mrrel: umls.mrrel ?? pick('MRREL') } };
}

/**
 * readConcepts, but a file that yields no concept is an InputError: an empty file, a file that is
 * not the format its name says (JSONL named .obo reads as an OBO header) or filters that keep
 * nothing (a lower-case --umls-lang) would otherwise load as an empty part of the KB.
 */
async function* readSome(path: string, format: KbFormat, options: KbLoadOptions): AsyncGenerator<Concept> {
  let any = false;
  for await (const concept of readConcepts(path, format, options)) {
    any = true;
    yield concept;
  }
  if (!any) throw new InputError(`${path}: no concepts read as ${format} (empty, another format, or filters that keep nothing)`, 'EMPTY_KB');
}

/**
 * The one KB concept a concept of another vocabulary denotes (by its id, alt ids or xrefs); undefined
 * when none or several. An alt id that several KB concepts list (`shared`) leads to each of them:
 * the store resolves it to one, but CTD gives one DOID id to several diseases.
 */
function soleTarget(store: ConceptStore, source: Concept, shared: ReadonlySet<string>): Concept | undefined {
  let target: Concept | undefined;
  for (const id of [source.id, ...source.altIds, ...source.xrefs]) {
    const found = store.get(id);
    if (found === undefined) continue;
    if (found.id !== id && shared.has(normalizeId(id))) return undefined;
    if (found === target) continue;
    if (target !== undefined) return undefined;
    target = found;
  }
  return target;
}

/** Alt ids that more than one concept of the store lists. */
function sharedAltIds(store: ConceptStore): Set<string> {
  const seen = new Set<string>();
  const shared = new Set<string>();
  for (const concept of store) for (const alt of concept.altIds) (seen.has(alt) ? shared : seen).add(alt);
  return shared;
}

/** The concepts of one file in a given format, as they come (not merged). */
export async function* readConcepts(path: string, format: KbFormat, options: KbLoadOptions = {}): AsyncGenerator<Concept> {
  switch (format) {
    case 'ctd':
      yield* readCtdDiseases(path);
      return;
    case 'jsonl':
      yield* readConceptJsonl(path);
      return;
    case 'obo':
      yield* readObo(path, { synonymScopes: options.synonymScopes });
      return;
    case 'obograph':
      yield* await readOboGraph(path, { synonymScopes: options.synonymScopes });
      return;
    case 'biosyn':
      yield* await readBiosynDictionary(path);
      return;
    case 'umls':
      yield* await readUmls(path, options.umls);
      return;
  }
}
