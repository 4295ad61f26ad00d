import type { ConceptHit } from '../retrieve/candidate-retriever.ts';
import type { LinkIndex } from '../retrieve/link-index.ts';
import type { MemoryStore } from '../retrieve/memory-store.ts';
import { initialsSpell } from '../text/abbreviations.ts';
import type { MemoryConfig } from './link-config.ts';
import type { Candidate } from './types.ts';

/** The parts of a mention's linking state the memory reads and reorders (MentionWork in linker.ts). */
export interface MemoryWork {
  /** The texts the exact lookups read: an in-note expansion first, then the mention as written. */
  exactTexts: string[];
  /** The mention as written when `exactTexts[0]` is its in-note expansion; null otherwise. */
  expandedFrom: string | null;
  vector?: Float32Array;
  hits: ConceptHit[];
  scores: number[];
  /** Votes per concept index and their total, kept between `decide` and `tieBreak`. */
  votes?: { byConcept: Map<number, number>; kb: Set<number>; total: number };
  memoryDecided: boolean;
  /** Label votes for the linked concept (for the one the memory decided, or the final top-1). */
  memorySupport: number;
  /** The cross-encoder scored this mention's candidates (those it scored carry rerankProbability). */
  reranked?: boolean;
  /** A concept outside the KB that the memory decided (its labels name an id the index lacks). */
  memoryConcept?: Candidate;
}

/**
 * The concepts a short form the note defines may mean: those retrieved for the definition's long
 * form (its exact name, its dense neighbours), not one reached only through the short form's own KB
 * name or put on the list by the memory alone. Undefined when nothing in the mention was written
 * out: it applies to every expanded mention, a whole short form, one inside a longer mention, or
 * one whose long form is another mention of the note (text/abbreviation-expansion.ts).
 */
function sensesOfDefinition(w: MemoryWork): Set<number> | undefined {
  if (w.expandedFrom === null) return undefined;
  return new Set(w.hits.filter((h) => h.via !== 'exact' && h.via !== 'memory').map((h) => h.conceptIndex));
}

/** A prototype match ranks a little below a KB name of the same similarity: names are curated, labels may be wrong. */
const PROTOTYPE_DISCOUNT = 0.98;

/**
 * How labelled mentions move a link. Evidence for a concept is its votes: one per memory label of
 * the mention's exact surface (normalized like KB names; a composite gold gives each of its ids a
 * vote; an in-note expansion's labels only while the written text's labels do not agree on one
 * concept), plus `denseWeight · similarity` per other surface (and concept) among the prototypes
 * of the mention's `neighbors` nearest with similarity ≥ `denseThreshold`. A concept whose KB name matches the
 * mention exactly gets `kbVotes` pseudo-votes: the ontology's own testimony. A short form the note
 * defines keeps the definition's sense: its labels and the tie-break count only for concepts
 * retrieved for the long form (`sensesOfDefinition`), and the long form's exact name testifies
 * instead of the short form's when its initials spell the short form and no label speaks for either.
 *
 * The rule (majority with minimum support): memory decides a link when the concept with the most
 * votes (KB pseudo-votes included) has at least `minSupport` memory votes and more than
 * `majority` of all votes. So with kbVotes = 1 one label cannot take a mention away from a
 * concept that owns its exact name (1 : 1 is no majority), one mislabel cannot flip a surface many
 * labels agree on (1 : n), and a label of a surface the KB does not know decides alone. A decided
 * link skips the reranker. With `outsideKb`, labels may name an id the KB lacks (a local code, an
 * OMIM id a MeSH-only index does not carry): when such an id wins by the same rule it is the link,
 * named by its id (never by mention text: that is note text), without semantic types (only for NER labels without a type filter).
 * Otherwise the votes only break ties: every candidate's final score
 * gains `bonus · share of votes + prior · log(1 + labels of the concept) / log(1 + max labels)`.
 */
export class MemoryEvidence {
  private readonly store: MemoryStore;
  private readonly index: LinkIndex;
  private readonly config: MemoryConfig;
  private readonly maxLog: number;

  constructor(store: MemoryStore, index: LinkIndex, config: MemoryConfig) {
    this.store = store;
    this.index = index;
    this.config = config;
    this.maxLog = Math.log1p(store.maxConceptCount);
  }

  get version(): string | undefined {
    return this.store.version;
  }

  /** Whether the memory holds labels for the surface (normalized): a label selector need not ask it again. */
  knowsSurface(text: string): boolean {
    return this.store.surfaceCounts(text).size > 0;
  }

  /**
   * Before reranking: count votes, add memory-only candidates, apply the majority rule. `allow`
   * masks the concepts the linker may not return (type filter, held-out concepts); `typeFiltered`
   * says the label's concepts must have certain semantic types, which an id outside the KB lacks.
   */
  decide(w: MemoryWork, allow: ((conceptIndex: number) => boolean) | undefined, typeFiltered = allow !== undefined): void {
    const { config, index, store } = this;
    const byConcept = new Map<number, number>();
    const prototypeSim = new Map<number, number>();
    const foreign = new Map<string, number>();
    const foreignSim = new Map<string, number>();
    let total = 0;
    // A short form the note defines has the definition's sense ("DM" after "diabetes mellitus (DM)"):
    // its labels may pick among the concepts retrieved for the long form, never a sense reached only
    // through the short form's own KB name ("AS" is also Angelman Syndrome) or proposed by the memory alone.
    const definedSenses = sensesOfDefinition(w);
    const consistent = (id: string): boolean => {
      const ci = index.indexOf(id);
      return ci !== undefined && definedSenses!.has(ci);
    };
    const vote = (id: string, n: number): void => {
      total += n;
      const ci = index.indexOf(id);
      if (ci === undefined && !typeFiltered && config.outsideKb) foreign.set(id, (foreign.get(id) ?? 0) + n);
      if (ci === undefined || (allow && !allow(ci))) return; // still evidence against the others
      byConcept.set(ci, (byConcept.get(ci) ?? 0) + n);
    };
    // The mention as written outranks its in-note expansion, which is the abbreviation finder's
    // guess: for "attenuated adenomatous polyposis coli (AAPC)" the shortest long form it accepts is
    // "adenomatous polyposis coli", whose labels then outvoted three agreeing labels of "AAPC"
    // (issue 25). The expansion's labels count only while the written text's labels do not agree
    // on one concept: it has none yet, or it is a short form labelled with several senses, which
    // the note's own definition may settle.
    const written = w.expandedFrom ?? w.exactTexts[0]!;
    const writtenKey = store.surfaceKey(written);
    const labelsOf = (text: string): ReadonlyMap<string, number> => {
      const counts = store.surfaceCounts(text);
      if (!definedSenses || store.surfaceKey(text) !== writtenKey) return counts;
      return new Map([...counts].filter(([id]) => consistent(id)));
    };
    const settled = labelsOf(written).size === 1;
    const keys = new Set<string>();
    for (const text of w.exactTexts) {
      // An expansion that normalizes like the short form is one surface, counted once.
      const key = store.surfaceKey(text);
      const counts = labelsOf(text);
      if (counts.size === 0 || keys.has(key)) continue;
      if (settled && key !== writtenKey) continue;
      keys.add(key);
      for (const [id, n] of counts) vote(id, n);
    }
    if (w.vector && store.size > 0 && config.neighbors > 0) {
      // One vote per neighbouring surface and concept, at its best similarity: nine labels of one
      // other string are one piece of evidence about that string, and counted per prototype they
      // outvoted the mention's own label ("attenuated adenomatous polyposis coli", labelled once,
      // went to the concept of nine nearby "adenomatous polyposis coli" prototypes; issue 25).
      const dense = new Map<string, { id: string; similarity: number }>();
      // Surface keys (normalized text, or its keyed hash in a memory without raw text) compared, never text.
      const exactKeys = new Set(w.exactTexts.map((t) => store.surfaceKey(t)));
      for (const { record, similarity } of store.nearest(w.vector, config.neighbors)) {
        for (const id of record.ids) {
          const ci = index.indexOf(id);
          if (ci !== undefined && similarity > (prototypeSim.get(ci) ?? -Infinity)) prototypeSim.set(ci, similarity);
          if (ci === undefined && similarity > (foreignSim.get(id) ?? -Infinity)) foreignSim.set(id, similarity);
        }
        if (similarity < config.denseThreshold || config.denseWeight === 0) continue;
        const surface = store.recordSurfaceKey(record);
        if (exactKeys.has(surface)) continue; // counted by the surface table
        for (const id of record.ids) {
          const key = `${surface}\u0000${id}`;
          if (similarity > (dense.get(key)?.similarity ?? -Infinity)) dense.set(key, { id, similarity });
        }
      }
      for (const { id, similarity } of dense.values()) vote(id, config.denseWeight * similarity);
    }
    if (total === 0) return;
    const kb = new Set<number>();
    // Only a true exact KB name testifies for the ontology: a looser rule's match is a guess, not the KB's word.
    // For a defined short form the written form's own name match is a sense the note did not choose.
    // The definition's name testifies instead when its initials spell the short form (it was not cut
    // short) and no label speaks for the short form or its long form: labels learn a corpus's
    // convention ("BMD" as Becker and Duchenne dystrophies, though "Becker muscular dystrophy" is a
    // KB name of Duchenne's); only near strings' labels are weighed against the definition.
    const definitionTestifies =
      w.expandedFrom !== null && initialsSpell(w.expandedFrom, w.exactTexts[0]!) && labelsOf(written).size === 0 && labelsOf(w.exactTexts[0]!).size === 0;
    for (const hit of w.hits) {
      if (definedSenses ? definitionTestifies && hit.via === 'abbreviation' : hit.exact) kb.add(hit.conceptIndex);
    }
    total += kb.size * config.kbVotes;
    w.votes = { byConcept, kb, total };
    this.addMemoryCandidates(w, byConcept, prototypeSim);
    let best = -1;
    let bestVotes = -Infinity;
    w.hits.forEach((hit) => {
      const v = (byConcept.get(hit.conceptIndex) ?? 0) + (kb.has(hit.conceptIndex) ? config.kbVotes : 0);
      if (v > bestVotes) {
        best = hit.conceptIndex;
        bestVotes = v;
      }
    });
    let foreignBest: string | undefined;
    for (const [id, v] of foreign) {
      if (v > bestVotes) {
        foreignBest = id;
        bestVotes = v;
      }
    }
    const support = foreignBest !== undefined ? foreign.get(foreignBest)! : (byConcept.get(best) ?? 0);
    w.memorySupport = support;
    if (foreignBest !== undefined) {
      if (support < config.minSupport || bestVotes / total <= config.majority) return;
      // Named by its id: a label's mention text is note text and never goes into the output. Its
      // score is its best prototype's discounted similarity, as for a KB concept only the memory
      // proposes: a vote share is no similarity, and a unanimous one read 1, which only an exact
      // KB name may.
      const score = (foreignSim.get(foreignBest) ?? config.denseThreshold) * PROTOTYPE_DISCOUNT;
      w.memoryConcept = { conceptId: foreignBest, name: foreignBest, semanticTypes: [], score, retrievalScore: 0, exact: false, via: 'memory' };
      w.memoryDecided = true;
      return;
    }
    if (support < config.minSupport || bestVotes / total <= config.majority) return;
    const at = w.hits.findIndex((h) => h.conceptIndex === best);
    const [hit] = w.hits.splice(at, 1);
    const [score] = w.scores.splice(at, 1);
    // First by the memory's decision; it keeps its own score (a vote share is no similarity).
    w.hits.unshift(hit!);
    w.scores.unshift(score!);
    w.memoryDecided = true;
  }

  /** The most tieBreak can add to a candidate's score (the rerank pruning's margin). */
  get tieBreakSlack(): number {
    return this.config.bonus + (this.maxLog > 0 ? this.config.prior : 0);
  }

  /** After reranking (or instead of it): votes and the frequency prior break near ties (they reorder, scores stay). */
  tieBreak(w: MemoryWork): void {
    this.reorderNearTies(w);
    // Votes for what is linked, not for the most-voted concept the reranker or the votes passed over.
    if (!w.memoryDecided && w.votes && w.hits.length > 0) w.memorySupport = w.votes.byConcept.get(w.hits[0]!.conceptIndex) ?? 0;
  }

  private reorderNearTies(w: MemoryWork): void {
    const { config } = this;
    if (w.memoryDecided || w.hits.length < 2 || (config.bonus === 0 && config.prior === 0)) return;
    const votes = w.votes;
    const definedSenses = sensesOfDefinition(w);
    const scored = w.hits.map((hit, i) => {
      let score = w.scores[i]!;
      if (definedSenses && !definedSenses.has(hit.conceptIndex)) return { hit, score, i };
      // A candidate the pruned rerank left unscored holds a stand-in score above its own; pruning
      // scored every candidate that could win the tie-break (tieBreakSlack), so this one cannot.
      if (w.reranked && hit.rerankProbability === undefined) return { hit, score, i };
      if (votes) score += (config.bonus * ((votes.byConcept.get(hit.conceptIndex) ?? 0) + (votes.kb.has(hit.conceptIndex) ? config.kbVotes : 0))) / votes.total;
      if (this.maxLog > 0) score += (config.prior * Math.log1p(this.store.conceptCount(this.index.concepts[hit.conceptIndex]!.id))) / this.maxLog;
      return { hit, score, i };
    });
    scored.sort((a, b) => b.score - a.score || a.i - b.i);
    // The votes only reorder: each candidate keeps its own score (with them added, an exact name
    // read over 1 and a dense hit could reach 1, which only an exact KB name may).
    const own = w.scores;
    w.hits = scored.map((s) => s.hit);
    w.scores = scored.map((s) => own[s.i]!);
  }

  /** Concepts only the memory proposes join the list at their best prototype's (discounted) similarity. */
  private addMemoryCandidates(w: MemoryWork, byConcept: Map<number, number>, prototypeSim: Map<number, number>): void {
    const present = new Set(w.hits.map((h) => h.conceptIndex));
    for (const ci of byConcept.keys()) {
      if (present.has(ci)) continue;
      const score = (prototypeSim.get(ci) ?? this.config.denseThreshold) * PROTOTYPE_DISCOUNT;
      let at = w.hits.findIndex((h, i) => !h.lexical && w.scores[i]! < score);
      if (at < 0) at = w.hits.length;
      w.hits.splice(at, 0, { conceptIndex: ci, score, similarity: score, via: 'memory', exact: false, lexical: false });
      w.scores.splice(at, 0, score);
    }
  }
}
