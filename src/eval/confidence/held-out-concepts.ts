import type { ConceptStore } from '../../kb/concept-store.ts';
import type { GoldCorpus } from '../gold.ts';
import { noteDraw } from '../gold-sampling.ts';
import type { OfflineEvalResult } from '../offline-eval.ts';

/** Seed of the held-out-concept draw (documented; keep it so runs compare). */
export const HOLD_OUT_SEED = 20261126;

export interface HeldOutConcepts {
  /** Primary ids removed from the linker's reach. */
  concepts: Set<string>;
  /** Mentions whose every gold concept was removed (gold NILs of the corpus not counted). */
  drawn: number;
  /** True when none of these gold ids is left in the KB. */
  removed: (goldIds: readonly string[]) => boolean;
}

/**
 * NIL without hand labels: gold concepts are taken out of the KB (the linker never returns them)
 * until a share `fraction` of the mentions has no right answer left; those must come out NIL.
 * Concepts are drawn in a seeded order and a concept is taken only while the mentions it strands
 * still fit the share: drawing mentions instead would take every frequent concept (in
 * NCBI-disease tune, 10% of the mentions name concepts that 63% of them share).
 */
export function holdOutConcepts(corpus: GoldCorpus, store: ConceptStore, fraction: number, seed: number): HeldOutConcepts {
  const byConcept = new Map<string, number>();
  const golds = [...corpus.gold.values()].map((g) => [...new Set(g.ids.flatMap((id) => store.resolveId(id) ?? []))]);
  for (const ids of golds) for (const id of ids) byConcept.set(id, (byConcept.get(id) ?? 0) + 1);
  const order = [...byConcept.keys()].sort((a, b) => noteDraw(a, seed) - noteDraw(b, seed) || (a < b ? -1 : 1));
  const concepts = new Set<string>();
  const budget = Math.round(fraction * golds.length);
  let stranded = 0;
  for (const id of order) {
    // Mentions this concept would strand: every resolvable gold id of theirs removed.
    const more = golds.filter((ids) => ids.length > 0 && ids.includes(id) && ids.every((g) => g === id || concepts.has(g))).length;
    if (stranded + more > budget) continue;
    concepts.add(id);
    stranded += more;
  }
  const removed = (goldIds: readonly string[]) =>
    goldIds.every((id) => {
      const primary = store.resolveId(id);
      return primary === undefined || concepts.has(primary);
    });
  return { concepts, drawn: stranded, removed };
}

export interface HoldOutRow {
  threshold: number;
  nilPrecision: number | null;
  nilRecall: number | null;
  nilF1: number | null;
  /** Share of the other mentions linked (not NIL) to a right top-1. */
  othersLinkedAcc1: number;
  /** othersLinkedAcc1 at threshold 0 minus at this one (points of acc@1 the NIL decision costs them). */
  othersLoss: number;
}

export interface HoldOutReport {
  seed: number;
  removedConcepts: number;
  drawnMentions: number;
  /** Mentions whose gold the KB no longer has (the ones that must be NIL). */
  heldOutMentions: number;
  otherMentions: number;
  /** acc@1 of the ranking on the others (NIL or not). */
  othersAcc1: number;
  /** The link config's threshold, then a sweep. */
  atConfigured: HoldOutRow;
  sweep: HoldOutRow[];
}

/** NIL precision/recall/F1 over the held-out mentions and the others' loss, at each threshold on confidence. */
export function holdOutReport(result: Pick<OfflineEvalResult, 'scored' | 'linked'>, heldOut: HeldOutConcepts, configured: number, seed = HOLD_OUT_SEED): HoldOutReport {
  const rows = result.scored.map((s, i) => ({ positive: heldOut.removed(s.goldIds), hit1: s.scores.hit1, linked: result.linked[i]! }));
  const positives = rows.filter((r) => r.positive);
  const others = rows.filter((r) => !r.positive);
  const isNil = (r: (typeof rows)[number], t: number) => r.linked.candidates.length === 0 || (r.linked.confidence ?? 1) < t;
  const row = (t: number): HoldOutRow => {
    const nil = rows.filter((r) => isNil(r, t));
    const tp = nil.filter((r) => r.positive).length;
    const precision = nil.length ? tp / nil.length : null;
    const recall = positives.length ? tp / positives.length : null;
    const f1 = precision !== null && recall !== null && precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : null;
    const linkedRight = (u: number) => (others.length ? others.filter((r) => r.hit1 && !isNil(r, u)).length / others.length : 0);
    return { threshold: t, nilPrecision: precision, nilRecall: recall, nilF1: f1, othersLinkedAcc1: linkedRight(t), othersLoss: linkedRight(0) - linkedRight(t) };
  };
  const sweep = Array.from({ length: 39 }, (_, i) => Math.round((i + 1) * 25) / 1000).map(row);
  return {
    seed,
    removedConcepts: heldOut.concepts.size,
    drawnMentions: heldOut.drawn,
    heldOutMentions: positives.length,
    otherMentions: others.length,
    othersAcc1: others.length ? others.filter((r) => r.hit1).length / others.length : 0,
    atConfigured: row(configured),
    sweep,
  };
}

/** The NIL rule's budget: the others may lose at most this much linked acc@1 (half a point). */
export const NIL_RULE_MAX_LOSS = 0.005;

/**
 * The NIL threshold by the rule of docs/confidence.md: the largest threshold of the sweep at which
 * the mentions whose concept is still in the KB lose at most NIL_RULE_MAX_LOSS of linked acc@1;
 * undefined when even the smallest loses more (then no confidence threshold is worth its cost).
 */
export function nilThresholdByRule(report: HoldOutReport, maxLoss = NIL_RULE_MAX_LOSS): HoldOutRow | undefined {
  return report.sweep.filter((row) => row.othersLoss <= maxLoss + 1e-12).at(-1);
}

const f = (v: number | null) => (v === null ? '—' : v.toFixed(3));

export function formatHoldOut(r: HoldOutReport): string {
  const lines = [
    `held-out concepts (seed ${r.seed}): ${r.removedConcepts} concepts removed, stranding ${r.drawnMentions} mentions; ${r.heldOutMentions} mentions must be NIL, ${r.otherMentions} others (ranking acc@1 ${r.othersAcc1.toFixed(3)})`,
    `${'threshold'.padEnd(11)}${'NIL-P'.padStart(7)}${'NIL-R'.padStart(7)}${'NIL-F1'.padStart(8)}${'others linked acc@1'.padStart(21)}${'loss'.padStart(8)}`,
  ];
  for (const row of [r.atConfigured, ...r.sweep]) {
    lines.push(`${(row === r.atConfigured ? `${row.threshold} (cfg)` : String(row.threshold)).padEnd(11)}${f(row.nilPrecision).padStart(7)}${f(row.nilRecall).padStart(7)}${f(row.nilF1).padStart(8)}${row.othersLinkedAcc1.toFixed(3).padStart(21)}${row.othersLoss.toFixed(3).padStart(8)}`);
  }
  return lines.join('\n');
}
