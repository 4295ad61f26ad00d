import { ParseError } from '../kb/errors.ts';
import { readLines } from '../kb/line-reader.ts';
import { parseGoldIds } from './gold-ids.ts';

/** One annotation of a PubTator document after the protocol's cleaning. */
export interface PubTatorAnnotation {
  start: number;
  end: number;
  text: string;
  /** Entity type column (`SpecificDisease`, `Chemical`, …): becomes the mention's NER label. */
  type: string;
  /** Normalized, distinct gold ids (a composite `A|B` / `A+B` gives several). Never empty. */
  ids: string[];
  /** 1-based line in the file, for error messages. */
  line: number;
}

export interface PubTatorDocument {
  pmid: string;
  title: string;
  abstract: string;
  /** title + ' ' + abstract: the string annotation offsets index into. */
  text: string;
  /** Sorted by (start, end); one per span. */
  annotations: PubTatorAnnotation[];
}

/** What the reader dropped, so reports can say how the mention count came about. */
export interface PubTatorStats {
  documents: number;
  duplicateDocuments: number;
  annotations: number;
  duplicateAnnotations: number;
  skippedNoConcept: number;
  relationLines: number;
}

export interface ReadPubTatorOptions {
  /** Keep only annotations whose type matches. */
  types?: RegExp;
  /** Filled in as the file is read. */
  stats?: PubTatorStats;
}

export function emptyPubTatorStats(): PubTatorStats {
  return { documents: 0, duplicateDocuments: 0, annotations: 0, duplicateAnnotations: 0, skippedNoConcept: 0, relationLines: 0 };
}

const TEXT_LINE = /^([^|\t]+)\|([ta])\|(.*)$/;

interface Pending {
  pmid: string;
  title?: string;
  abstract?: string;
  raw: { fields: string[]; line: number }[];
  firstLine: number;
}

/**
 * Streams the documents of a PubTator file, one at a time, applying the evaluation protocol of
 * shared/data/README.md: identical annotations (same document, start, end) count once, a
 * document that appears again is skipped, gold `-1` is skipped, composite ids become a set.
 * Malformed lines throw a ParseError naming file and line.
 */
export async function* readPubTator(file: string, options: ReadPubTatorOptions = {}): AsyncGenerator<PubTatorDocument> {
  const stats = options.stats ?? emptyPubTatorStats();
  const seen = new Set<string>();
  let pending: Pending | undefined;

  const finish = (doc: Pending): PubTatorDocument | undefined => {
    if (seen.has(doc.pmid)) {
      stats.duplicateDocuments++;
      return undefined;
    }
    seen.add(doc.pmid);
    stats.documents++;
    return buildDocument(file, doc, options, stats);
  };

  for await (const { text: line, number: lineNo } of readLines(file)) {
    if (line.trim() === '') {
      if (pending) {
        const doc = finish(pending);
        pending = undefined;
        if (doc) yield doc;
      }
      continue;
    }
    const text = TEXT_LINE.exec(line);
    const pmid = text ? text[1]! : line.split('\t')[0]!;
    if (pending && pending.pmid !== pmid) {
      // Documents not separated by a blank line.
      const doc = finish(pending);
      pending = undefined;
      if (doc) yield doc;
    }
    pending ??= { pmid, raw: [], firstLine: lineNo };
    if (text) {
      const field = text[2] === 't' ? 'title' : 'abstract';
      if (pending[field] !== undefined) throw new ParseError(file, lineNo, `second ${field} line for document ${pmid}`);
      if (pending.raw.length > 0) throw new ParseError(file, lineNo, `${field} line after annotations of document ${pmid}`);
      pending[field] = text[3]!;
      continue;
    }
    const fields = line.split('\t');
    if (fields.length === 4 && !/^\d+$/.test(fields[1]!)) {
      // BioCreative relation lines (`PMID CID D1 D2`): not mentions.
      stats.relationLines++;
      continue;
    }
    if (fields.length < 6) throw new ParseError(file, lineNo, `expected 'PMID|t|title', 'PMID|a|abstract' or 6 tab-separated annotation fields, got ${fields.length} field(s)`);
    pending.raw.push({ fields, line: lineNo });
  }
  if (pending) {
    const doc = finish(pending);
    if (doc) yield doc;
  }
}

function buildDocument(file: string, doc: Pending, options: ReadPubTatorOptions, stats: PubTatorStats): PubTatorDocument {
  if (doc.title === undefined) throw new ParseError(file, doc.firstLine, `document ${doc.pmid} has no title line`);
  const abstract = doc.abstract ?? '';
  const text = doc.abstract === undefined ? doc.title : `${doc.title} ${abstract}`;
  const bySpan = new Map<string, PubTatorAnnotation>();
  for (const { fields, line } of doc.raw) {
    const [, startField, endField, mention, type, idField] = fields as [string, string, string, string, string, string];
    const start = Number(startField);
    const end = Number(endField);
    if (!/^\d+$/.test(startField) || !/^\d+$/.test(endField) || start >= end) throw new ParseError(file, line, `bad offsets '${startField}'..'${endField}'`);
    if (end > text.length) throw new ParseError(file, line, `span [${start}, ${end}) is past the end of document ${doc.pmid} (length ${text.length})`);
    // The span is the truth; one NCBI train line writes its mention with trailing spaces.
    const covered = text.slice(start, end);
    if (covered.trim() !== mention.trim()) throw new ParseError(file, line, `mention text does not match the span [${start}, ${end}) of document ${doc.pmid}`);
    if (options.types && !options.types.test(type)) continue;
    const ids = parseGoldIds(idField);
    if (ids.length === 0) {
      stats.skippedNoConcept++;
      continue;
    }
    const key = `${start}:${end}`;
    if (bySpan.has(key)) {
      stats.duplicateAnnotations++;
      continue;
    }
    stats.annotations++;
    bySpan.set(key, { start, end, text: covered, type, ids, line });
  }
  const annotations = [...bySpan.values()].sort((a, b) => a.start - b.start || a.end - b.end);
  return { pmid: doc.pmid, title: doc.title, abstract, text, annotations };
}
