import type { Concept } from './concept.ts';
import { addSynonym, addUnique, newConcept } from './concept-builder.ts';
import { ParseError } from './errors.ts';
import { normalizeId } from './ids.ts';
import { readLines } from './line-reader.ts';
import { DEFAULT_SYNONYM_SCOPES, type SynonymScope } from './synonym-scope.ts';

export interface OboOptions {
  /** Synonym scopes to keep as names (default EXACT and RELATED). */
  synonymScopes?: readonly SynonymScope[];
}

/** OBO 1.0 spelled the scope into the tag; OBO 1.2/1.4 use `synonym: "..." SCOPE`. */
const LEGACY_SYNONYM_TAGS: Readonly<Record<string, SynonymScope>> = {
  exact_synonym: 'EXACT',
  related_synonym: 'RELATED',
  narrow_synonym: 'NARROW',
  broad_synonym: 'BROAD',
};

interface Stanza {
  concept: Concept;
  line: number;
  obsolete: boolean;
}

/**
 * Streams the live `[Term]` stanzas of an OBO 1.2/1.4 file (doid.obo) as concepts: id, name,
 * synonyms in the chosen scopes, def, is_a → parents, xref → xrefs, alt_id → altIds (all
 * normalized). Obsolete terms, `[Typedef]`/`[Instance]` stanzas and unknown tags are skipped.
 */
export async function* readObo(path: string, options: OboOptions = {}): AsyncGenerator<Concept> {
  const scopes = new Set(options.synonymScopes ?? DEFAULT_SYNONYM_SCOPES);
  let stanza: Stanza | undefined;
  let inTerm = false;
  for await (const line of readLines(path)) {
    const text = line.text.trim();
    if (text.length === 0 || text.charCodeAt(0) === 33 /* ! */) continue;
    if (text.charCodeAt(0) === 91 /* [ */) {
      const done = finish(stanza, path);
      if (done) yield done;
      inTerm = text === '[Term]';
      stanza = inTerm ? { concept: newConcept('', ''), line: line.number, obsolete: false } : undefined;
      continue;
    }
    const colon = text.indexOf(':');
    if (colon <= 0) throw new ParseError(path, line.number, `expected 'tag: value', got '${clip(text)}'`);
    if (!inTerm || !stanza) continue; // header or a skipped stanza
    const tag = text.slice(0, colon);
    const value = text.slice(colon + 1).trim();
    const c = stanza.concept;
    switch (tag) {
      case 'id':
        c.id = normalizeId(firstToken(value));
        break;
      case 'name':
        c.name = readUnquoted(value);
        break;
      case 'def': {
        const quoted = readQuoted(value);
        if (quoted === undefined) throw new ParseError(path, line.number, 'def value must be a closed quoted string');
        if (quoted.text.length > 0) c.definition = quoted.text;
        break;
      }
      case 'synonym': {
        const quoted = readQuoted(value);
        if (quoted === undefined) throw new ParseError(path, line.number, 'synonym value must be a closed quoted string');
        // A missing scope means RELATED (OBO 1.4 §synonym), also when the dbxref list follows the text directly.
        const token = firstToken(quoted.rest);
        const scope = (token === '' || token.startsWith('[') ? 'RELATED' : token) as SynonymScope;
        if (scopes.has(scope)) addSynonym(c, quoted.text);
        break;
      }
      case 'is_a': {
        const parent = normalizeId(firstToken(value));
        if (parent.length > 0) addUnique(c.parents, parent);
        break;
      }
      case 'xref':
        addUnique(c.xrefs, normalizeId(firstToken(value)));
        break;
      case 'alt_id':
        addUnique(c.altIds, normalizeId(firstToken(value)));
        break;
      case 'is_obsolete':
        stanza.obsolete = firstToken(value) === 'true';
        break;
      default: {
        const legacy = LEGACY_SYNONYM_TAGS[tag];
        if (legacy !== undefined && scopes.has(legacy)) {
          const quoted = readQuoted(value);
          if (quoted) addSynonym(c, quoted.text);
        }
      }
    }
  }
  const done = finish(stanza, path);
  if (done) yield done;
}

function finish(stanza: Stanza | undefined, path: string): Concept | undefined {
  if (!stanza || stanza.obsolete) return undefined;
  const c = stanza.concept;
  if (c.id.length === 0) throw new ParseError(path, stanza.line, '[Term] stanza without an id');
  // A nameless live term cannot be linked by name; leave it out rather than invent a name.
  if (c.name.length === 0) return undefined;
  // `name` may have been read after synonyms that repeat it.
  const dup = c.synonyms.indexOf(c.name);
  if (dup >= 0) c.synonyms.splice(dup, 1);
  c.parents = c.parents.filter((p) => p !== c.id);
  c.altIds = c.altIds.filter((a) => a !== c.id);
  return c;
}

/**
 * An unquoted OBO 1.4 value with its backslash escapes decoded, so `Hodgkin\, lymphoma \! 2`
 * keeps its comma and `!`. It ends at the first unescaped `!` (a comment) or `{` (trailing
 * qualifiers), as in the OBO 1.4 reference parser (OWLAPI), and is trimmed.
 */
function readUnquoted(value: string): string {
  return scanUnquoted(value, false);
}

/** The value's first token, read as readUnquoted does and also ended by unescaped whitespace (drops descriptions). */
function firstToken(value: string): string {
  return scanUnquoted(value, true);
}

function scanUnquoted(value: string, token: boolean): string {
  let text = '';
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]!;
    if (ch === '\\' && i + 1 < value.length) {
      text += decodeEscape(value[++i]!);
    } else if (ch === '!' || ch === '{' || (token && /\s/.test(ch))) {
      break;
    } else {
      text += ch;
    }
  }
  return token ? text : text.trim();
}

/** The character an OBO backslash escape stands for; `\n` and `\t` become spaces because names and defs are one line. */
function decodeEscape(next: string): string {
  return next === 'n' || next === 't' ? ' ' : next;
}

/** Reads a leading OBO quoted string with backslash escapes; `rest` is what follows it. */
function readQuoted(value: string): { text: string; rest: string } | undefined {
  if (value.charCodeAt(0) !== 34 /* " */) return undefined;
  let text = '';
  for (let i = 1; i < value.length; i++) {
    const ch = value[i]!;
    if (ch === '\\' && i + 1 < value.length) {
      text += decodeEscape(value[++i]!);
    } else if (ch === '"') {
      return { text: text.trim(), rest: value.slice(i + 1).trim() };
    } else {
      text += ch;
    }
  }
  return undefined;
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
