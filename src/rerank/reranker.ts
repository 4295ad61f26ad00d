import type { Concept } from '../kb/concept.ts';
import type { PairScorer } from './pair-scorer.ts';

export interface RerankItem {
  /** The mention as the cross-encoder's manifest wants it (markers, context). */
  query: string;
  candidates: readonly Concept[];
}

export interface RerankOptions {
  /** Second segment is `name ; semantic type` when the model was trained so. */
  includeSemanticType: boolean;
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/**
 * Scores every (mention, candidate) pair of many mentions in one cross-encoder call, so pairs
 * from a whole micro-batch share the encoder's length-bucketed batches.
 */
export class Reranker {
  private readonly scorer: PairScorer;
  private readonly options: RerankOptions;

  constructor(scorer: PairScorer, options: RerankOptions) {
    this.scorer = scorer;
    this.options = options;
  }

  get modelId(): string {
    return this.scorer.modelId;
  }

  candidateText(concept: Concept): string {
    const type = concept.semanticTypes[0];
    return this.options.includeSemanticType && type ? `${concept.name} ; ${type}` : concept.name;
  }

  /**
   * Probabilities (sigmoid of the logits), one array per item, aligned with its candidates.
   * Items of different `groups` (one id per item) never share a model batch; `'pair'` puts every
   * pair in its own batch, so each probability depends on its pair alone.
   */
  async rerank(items: readonly RerankItem[], groups?: readonly number[] | 'pair'): Promise<Float32Array[]> {
    const pairs: { query: string; candidate: string }[] = [];
    const pairGroups: number[] = [];
    items.forEach((item, i) => {
      for (const concept of item.candidates) {
        pairs.push({ query: item.query, candidate: this.candidateText(concept) });
        pairGroups.push(groups === 'pair' ? pairGroups.length : (groups?.[i] ?? 0));
      }
    });
    const logits = pairs.length > 0 ? await this.scorer.score(pairs, groups ? pairGroups : undefined) : new Float32Array(0);
    const out: Float32Array[] = [];
    let offset = 0;
    for (const item of items) {
      const probabilities = new Float32Array(item.candidates.length);
      for (let i = 0; i < probabilities.length; i++) probabilities[i] = sigmoid(logits[offset + i]!);
      offset += item.candidates.length;
      out.push(probabilities);
    }
    return out;
  }
}
