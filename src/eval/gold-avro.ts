import type { GoldMentionRecord } from '../stream/avro/avro-records.ts';
import { CuilinkError } from '../kb/errors.ts';
import { MAX_GOLD_IDS, type GoldMention } from './gold.ts';

/** A GoldMention as the gold topic's Avro record; `annotatedAt` defaults to now. */
export function goldMentionToAvro(gold: GoldMention, provenance: { annotator?: string | null; annotatedAt?: number } = {}): GoldMentionRecord {
  return {
    noteId: gold.noteId,
    mentionId: gold.mentionId,
    ids: [...gold.ids],
    label: gold.label,
    start: gold.start,
    end: gold.end,
    annotator: provenance.annotator ?? null,
    annotatedAt: provenance.annotatedAt ?? Date.now(),
  };
}

/**
 * The evaluator's GoldMention; annotator and time are provenance it does not score on. Both readers
 * of the gold topic (the sidecar evaluator and the memory updater) take labels through here, so a
 * label naming more than MAX_GOLD_IDS ids is refused the same way by both: RECORD_TOO_LARGE, a
 * record fault, skipped with its code.
 */
export function avroToGoldMention(record: GoldMentionRecord): GoldMention {
  if (record.ids.length > MAX_GOLD_IDS) throw new CuilinkError('RECORD_TOO_LARGE', `a gold label naming ${record.ids.length} concept ids; at most ${MAX_GOLD_IDS} are read`);
  return { noteId: record.noteId, mentionId: record.mentionId, ids: [...record.ids], label: record.label, start: record.start, end: record.end };
}
