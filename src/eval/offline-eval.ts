import { performance } from 'node:perf_hooks';
import type { LinkedMention, LinkingCore } from '../link/types.ts';
import { mentionKey, type GoldCorpus } from './gold.ts';
import { joinMention } from './mention-join.ts';
import type { ScoredMention } from './metrics/mention-record.ts';
import { computeMetrics, type MetricsReport } from './metrics/metrics-accumulator.ts';
import type { OntologyView } from './metrics/ontology-view.ts';
import { scoreRecord } from './metrics/score-mention.ts';
import { assignGroupedCalibrationVariance, mentionGroup } from './metrics/calibration-test.ts';
import { DEFAULT_CALIBRATION_BINS } from './metrics/metric-units.ts';
import { tuneDocumentIds, type SplitPart } from './tuning-split.ts';
import type { ConfidencePoint } from './confidence/selective-metrics.ts';

export interface OfflineEvalOptions {
  /** Notes per linkNotes call. */
  batchSize?: number;
  /** Called after each batch with mentions linked so far. */
  onProgress?: (mentionsDone: number, mentionsTotal: number) => void;
}

export interface OfflineEvalResult {
  metrics: MetricsReport;
  /** One per gold mention, in corpus order: what `--predictions` writes and `compare` reads. */
  scored: ScoredMention[];
  /** The linker's output for each scored mention, same order (a stand-in without candidates where it gave none). */
  linked: LinkedMention[];
  notes: number;
  mentions: number;
  /** Gold mentions the linker returned nothing for (scored as NIL with no candidates). */
  missingPredictions: number;
  /** Wall time spent inside linkNotes. */
  linkSeconds: number;
  mentionsPerSecond: number;
}

const NO_PREDICTION: Omit<LinkedMention, 'mentionId' | 'start' | 'end' | 'label'> = {
  conceptId: null,
  conceptName: null,
  semanticTypes: [],
  score: 0,
  confidence: null,
  via: null,
  nil: true,
  reranked: false,
  candidates: [],
};

/**
 * Keeps one part of the fixed tuning split of a corpus (notes and their gold), in place. The split
 * is drawn over every document of the file (`documentIds`), so a type filter or a document whose
 * gold is all `-1` never moves another document between tune and learn, and `memory add --split`
 * (which draws over the same documents) learns nothing that `eval --split tune` scores.
 */
export function keepSplitPart(corpus: GoldCorpus, part: SplitPart, seed: number, source?: string): void {
  const tune = tuneDocumentIds(corpus.documentIds ?? corpus.notes.map((n) => n.noteId), { seed, source });
  corpus.notes = corpus.notes.filter((n) => tune.has(n.noteId) === (part === 'tune'));
  const kept = new Set(corpus.notes.map((n) => n.noteId));
  for (const [key, g] of corpus.gold) if (!kept.has(g.noteId)) corpus.gold.delete(key);
}


/** (confidence, top-1 right, group) of every linked mention that has a confidence: what selective metrics read. */
export function confidencePoints(result: Pick<OfflineEvalResult, 'scored' | 'linked'>): ConfidencePoint[] {
  return result.scored.flatMap((s, i) => {
    const linked = result.linked[i]!;
    const confidence = linked.confidence;
    return confidence === null || linked.candidates.length === 0 ? [] : [{ confidence, correct: s.scores.hit1, group: mentionGroup(s) }];
  });
}

/** Links every note of the corpus through the core, in batches, and scores each gold mention. */
export async function evaluateCorpus(core: LinkingCore, corpus: GoldCorpus, view: OntologyView, options: OfflineEvalOptions = {}): Promise<OfflineEvalResult> {
  const batchSize = options.batchSize ?? 32;
  const linked = new Map<string, LinkedMention>();
  let linkSeconds = 0;
  let done = 0;
  for (let i = 0; i < corpus.notes.length; i += batchSize) {
    const batch = corpus.notes.slice(i, i + batchSize);
    const started = performance.now();
    const out = await core.linkNotes(batch);
    linkSeconds += (performance.now() - started) / 1000;
    for (const note of out) for (const m of note.mentions) linked.set(mentionKey(note.noteId, m.mentionId), m);
    done += batch.reduce((n, note) => n + note.mentions.length, 0);
    options.onProgress?.(done, corpus.gold.size);
  }
  const scored: ScoredMention[] = [];
  const linkedInOrder: LinkedMention[] = [];
  let missing = 0;
  for (const [key, gold] of corpus.gold) {
    let prediction = linked.get(key);
    if (!prediction) {
      missing++;
      prediction = { ...NO_PREDICTION, mentionId: gold.mentionId, start: gold.start, end: gold.end, label: gold.label };
    }
    scored.push(scoreRecord(joinMention(gold, prediction, view), view));
    linkedInOrder.push(prediction);
  }
  // The whole corpus is scored at once: every group of the calibration test is whole, as calibratedEce draws it.
  assignGroupedCalibrationVariance(scored, DEFAULT_CALIBRATION_BINS);
  return {
    metrics: computeMetrics(scored),
    scored,
    linked: linkedInOrder,
    notes: corpus.notes.length,
    mentions: scored.length,
    missingPredictions: missing,
    linkSeconds,
    mentionsPerSecond: linkSeconds > 0 ? scored.length / linkSeconds : 0,
  };
}
