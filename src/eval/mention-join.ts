import type { LinkedMention } from '../link/types.ts';
import type { GoldMention } from './gold.ts';
import { distinctInOrder, type MentionRecord } from './metrics/mention-record.ts';
import type { OntologyView } from './metrics/ontology-view.ts';

/** Ranked distinct concepts of a linked mention: its candidates, or its one concept when it has none. */
export function predictedConcepts(linked: LinkedMention): string[] {
  const ids = linked.candidates.map((c) => c.conceptId);
  if (ids.length === 0 && linked.conceptId !== null) ids.push(linked.conceptId);
  return distinctInOrder(ids);
}

/**
 * The record the metrics take for one gold mention and the linker's output for it. Offline eval
 * and the sidecar both build records here, so they judge the same thing. Semantic types are the
 * gold concept's (what the mention is), not the prediction's (what the linker thought).
 */
export function joinMention(gold: GoldMention, linked: LinkedMention, view: OntologyView): MentionRecord {
  const types = new Set<string>();
  for (const id of gold.ids) {
    const primary = view.resolve(id);
    if (primary !== undefined) for (const t of view.semanticTypes(primary)) types.add(t);
  }
  return {
    noteId: gold.noteId,
    mentionId: gold.mentionId,
    goldIds: gold.ids,
    predicted: predictedConcepts(linked),
    nil: linked.nil,
    topScore: linked.confidence ?? linked.score,
    // Only a probability is binned: none without a calibration, nor without a candidate to be right about.
    confidence: linked.candidates.length > 0 ? (linked.confidence ?? null) : null,
    via: linked.via ?? null,
    label: gold.label,
    semanticTypes: [...types].sort(),
  };
}
