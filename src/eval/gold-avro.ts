import type { GoldMentionRecord } from '../stream/avro/avro-records.ts';
import type { GoldMention } from './gold.ts';

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

/** The evaluator's GoldMention; annotator and time are provenance it does not score on. */
export function avroToGoldMention(record: GoldMentionRecord): GoldMention {
  return { noteId: record.noteId, mentionId: record.mentionId, ids: [...record.ids], label: record.label, start: record.start, end: record.end };
}
