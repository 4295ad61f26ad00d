import { performance } from 'node:perf_hooks';
import type { LinkedMention, LinkingCore } from '../link/types.ts';
import { mentionKey, type GoldCorpus } from './gold.ts';
import { joinMention } from './mention-join.ts';
import type { ScoredMention } from './metrics/mention-record.ts';
import { computeMetrics, type MetricsReport } from './metrics/metrics-accumulator.ts';
import type { OntologyView } from './metrics/ontology-view.ts';
import { scoreRecord } from './metrics/score-mention.ts';

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
  nil: true,
  reranked: false,
  candidates: [],
};

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
  let missing = 0;
  for (const [key, gold] of corpus.gold) {
    let prediction = linked.get(key);
    if (!prediction) {
      missing++;
      prediction = { ...NO_PREDICTION, mentionId: gold.mentionId, start: gold.start, end: gold.end, label: gold.label };
    }
    scored.push(scoreRecord(joinMention(gold, prediction, view), view));
  }
  return {
    metrics: computeMetrics(scored),
    scored,
    notes: corpus.notes.length,
    mentions: scored.length,
    missingPredictions: missing,
    linkSeconds,
    mentionsPerSecond: linkSeconds > 0 ? scored.length / linkSeconds : 0,
  };
}
