/**
 * Concept id normalization shared by every loader, the index, the linker and the evaluator, so that
 * a gold `D005955`, a dictionary `MSH:D005955` and a KB `MESH:D005955` compare equal.
 */

/** Prefix spellings seen in the sources, mapped to the one the KB uses (keys lower-case). */
const PREFIX_ALIASES: ReadonlyMap<string, string> = new Map([
  ['mesh', 'MESH'],
  ['msh', 'MESH'],
  ['umls', 'UMLS'],
  ['umls_cui', 'UMLS'],
  ['omim', 'OMIM'],
  ['mim', 'OMIM'],
  ['hp', 'HP'],
  ['hpo', 'HP'],
  ['doid', 'DOID'],
  ['mondo', 'MONDO'],
  ['icd10cm', 'ICD10CM'],
  ['icd9cm', 'ICD9CM'],
  ['ncit', 'NCIT'],
  ['nci', 'NCIT'],
  ['orphanet', 'Orphanet'],
  ['ordo', 'Orphanet'],
]);

const OBO_IRI = /^https?:\/\/purl\.obolibrary\.org\/obo\/([A-Za-z][A-Za-z0-9]*)_([A-Za-z0-9]+)$/;
const OBO_LOCAL = /^([A-Za-z][A-Za-z0-9]*)_(\d+)$/;
// MeSH descriptors (D) and supplementary concepts (C) have 6 digits, or 9 since 2018.
// A C followed by exactly 7 digits is a UMLS CUI, not MeSH.
const BARE_MESH = /^[DC](?:\d{6}|\d{9})$/;
const BARE_CUI = /^C\d{7}$/;
// MIM numbers are exactly 6 digits; the 2012 MEDIC dictionary writes them bare.
const BARE_OMIM = /^\d{6}$/;

/**
 * Canonical prefixed form of a concept id: trims spaces, maps prefix aliases (`MSH:`, `mesh:` →
 * `MESH:`; `UMLS_CUI:`, `umls:` → `UMLS:`), prefixes bare MeSH ids (`D005955` → `MESH:D005955`),
 * bare CUIs (`C0011849` → `UMLS:C0011849`) and bare MIM numbers (`613097` → `OMIM:613097`),
 * rewrites OBO local ids and PURLs (`HP_0001250`, `http://purl.obolibrary.org/obo/HP_0001250` →
 * `HP:0001250`) and CTD's doubled `DO:DOID:0060395` → `DOID:0060395`. Unknown prefixes are kept
 * as written. Idempotent.
 */
export function normalizeId(raw: string): string {
  const id = raw.trim();
  if (id.length === 0) return id;
  const colon = id.indexOf(':');
  if (colon < 0) {
    if (BARE_MESH.test(id)) return `MESH:${id}`;
    if (BARE_CUI.test(id)) return `UMLS:${id}`;
    if (BARE_OMIM.test(id)) return `OMIM:${id}`;
    const local = OBO_LOCAL.exec(id);
    if (local) return `${canonicalPrefix(local[1]!)}:${local[2]!}`;
    return id;
  }
  if (id.charCodeAt(0) === 104 /* h */ && id.startsWith('http')) {
    const iri = OBO_IRI.exec(id);
    return iri ? `${canonicalPrefix(iri[1]!)}:${iri[2]!}` : id;
  }
  const prefix = id.slice(0, colon);
  const local = id.slice(colon + 1).trim();
  if (prefix === 'DO' && local.startsWith('DOID:')) return local;
  const canonical = canonicalPrefix(prefix);
  // Fast path: already canonical, return the input string itself (keeps interned copies shared).
  if (canonical === prefix && local.length === id.length - colon - 1) return id;
  return `${canonical}:${local}`;
}

// DOID writes release-stamped SNOMED prefixes (`SNOMEDCT_US_2023_03_01:`); the code is the same.
const DATED_PREFIX = /^(.+)_\d{4}_\d{2}_\d{2}$/;

function canonicalPrefix(prefix: string): string {
  const alias = PREFIX_ALIASES.get(prefix.toLowerCase());
  if (alias !== undefined) return alias;
  const dated = DATED_PREFIX.exec(prefix);
  return dated ? dated[1]! : prefix;
}

/** The prefix of a normalized id (`MESH` for `MESH:D005955`), or '' when it has none. */
export function idPrefix(id: string): string {
  const colon = id.indexOf(':');
  return colon < 0 ? '' : id.slice(0, colon);
}
