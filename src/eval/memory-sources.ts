import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { InputError } from '../kb/errors.ts';
import type { LabelledMention } from '../link/memory-learner.ts';
import { parseGoldIds } from './gold-ids.ts';
import { MAX_GOLD_IDS, refuseOversizedGoldLabels } from './gold.ts';
import { readPubTator } from './pubtator.ts';
import { selectSplit, type SplitPart } from './tuning-split.ts';
import { parseJsonSafely } from '../kb/safe-json.ts';

/**
 * Where labelled mentions come from besides the gold topic: a PubTator corpus (every annotation
 * with its gold ids; a composite `A|B` keeps both ids) or a gold JSONL file (one labelled mention
 * per line; `cuilink memory export` writes this format, so export → edit → add round-trips).
 */
export async function labelledMentionsFromPubTator(file: string, options: { types?: RegExp; split?: SplitPart; splitSeed?: number; time?: number } = {}): Promise<LabelledMention[]> {
  const docs = [];
  for await (const doc of readPubTator(file, { types: options.types })) {
    refuseOversizedGoldLabels(file, doc);
    docs.push(doc);
  }
  const kept = options.split === undefined ? docs : selectSplit(docs, (d) => d.pmid, options.split, { seed: options.splitSeed, source: file });
  const time = options.time ?? Date.now();
  const out: LabelledMention[] = [];
  for (const doc of kept) {
    for (const a of doc.annotations) {
      out.push({
        record: { text: a.text, label: a.type, ids: a.ids, source: `corpus:${options.split ?? 'all'}`, time, noteId: doc.pmid, mentionId: `${a.start}-${a.end}` },
        note: { text: doc.text, start: a.start, end: a.end },
      });
    }
  }
  return out;
}

const goldLineSchema = z
  .object({
    text: z.string().min(1),
    label: z.string().default(''),
    /** Concept ids; or `conceptId` with a gold field (`A|B` composite allowed). */
    ids: z.array(z.string()).optional(),
    conceptId: z.string().optional(),
    context: z.string().nullable().optional(),
    source: z.string().optional(),
    time: z.number().int().nonnegative().optional(),
    noteId: z.string().nullable().optional(),
    mentionId: z.string().nullable().optional(),
    seq: z.number().optional(),
  })
  .passthrough();

export function labelledMentionsFromJsonl(file: string, options: { time?: number } = {}): LabelledMention[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(`cannot read ${file}: ${(error as Error).message}`, 'BAD_FLAGS', error);
  }
  const out: LabelledMention[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    const where = `${file}:${i + 1}`;
    // Labelled mentions hold note text: the parser's own message (and cause) would quote it.
    const json = parseJsonSafely(raw);
    if ('reason' in json) throw new InputError(`${where}: ${json.reason}`, 'BAD_MEMORY');
    const value = json.value;
    if (typeof value === 'object' && value !== null && !('text' in value) && 'surfaceHash' in value) throw new InputError(`${where}: a record of a memory without raw text (surfaceHash, no text): it cannot be added again; add the labels from their source`, 'BAD_MEMORY');
    const parsed = goldLineSchema.safeParse(value);
    if (!parsed.success) throw new InputError(`${where}: field '${parsed.error.issues[0]!.path.join('.')}': ${parsed.error.issues[0]!.message}`, 'BAD_MEMORY');
    const line = parsed.data;
    const ids = parseGoldIds((line.ids ?? []).join('|') || line.conceptId || '');
    if (ids.length === 0) throw new InputError(`${where}: no concept id (give ids or conceptId; -1 is not a label)`, 'BAD_MEMORY');
    // As the corpus path and the gold topic: a label the stream's readers refuse is not learnt here either.
    if (ids.length > MAX_GOLD_IDS) throw new InputError(`${where}: a gold label naming ${ids.length} concept ids; at most ${MAX_GOLD_IDS} are read (the gold topic's readers refuse more)`, 'BAD_MEMORY');
    out.push({
      record: { text: line.text, label: line.label, ids, context: line.context ?? null, source: line.source ?? `jsonl:${file}`, time: line.time ?? options.time ?? Date.now(), noteId: line.noteId ?? null, mentionId: line.mentionId ?? null },
    });
  });
  return out;
}
