import { z } from 'zod';
import { InputError } from '../kb/errors.ts';

/**
 * Linking options, validated once at entry (CLI flags, config file or the stream's config).
 * Defaults are chosen on the tune split of NCBI-disease train (bench/results/accuracy-tuning.json,
 * docs/accuracy.md); dev is reported only (bench/results/link.json, accuracy-ablation.json).
 */
export const linkConfigSchema = z
  .object({
    /** Candidates returned per mention. */
    topK: z.number().int().min(1).max(100).default(5),
    /** Concepts retrieved per mention before reranking and filtering. */
    retrieveK: z.number().int().min(1).max(1000).default(20),
    /** HNSW search breadth; the index manifest's value when absent. */
    efSearch: z.number().int().min(1).max(10000).optional(),
    rerank: z
      .object({
        /** `ambiguous`: only mentions whose top-1 is not a unique exact match and whose top-1/top-2 margin is small. */
        policy: z.enum(['always', 'ambiguous', 'never']).default('ambiguous'),
        /** Candidates the cross-encoder scores. */
        candidates: z.number().int().min(2).max(100).default(10),
        /** Retrieval-score margin under which a mention counts as ambiguous. */
        margin: z.number().min(0).max(2).default(0.05),
        /**
         * Weight of the cross-encoder against retrieval: final = w·sigmoid(logit) + (1-w)·retrieval,
         * so a reranker never throws away a strong retrieval signal entirely.
         */
        weight: z.number().min(0).max(1).default(1),
      })
      .default({}),
    nil: z
      .object({
        /** Mentions whose best final score is below this are NIL (candidates kept). */
        threshold: z.number().min(-1).max(1).default(0),
      })
      .default({}),
    /** NER label → allowed semantic types; labels not listed are not filtered. */
    typeFilter: z.record(z.string(), z.array(z.string()).min(1)).default({}),
    /** Resolve `SF` mentions through `long form (SF)` definitions found in the same note. */
    abbreviations: z.boolean().default(true),
    /**
     * Query-side fixes of issue 14 (bench/results/accuracy-ablation.json has each on and off;
     * chosen on the tune split of NCBI-disease train).
     */
    query: z
      .object({
        /** Second-chance name lookup under a looser key: plurals, British spelling, word order, roman numerals, Greek letters. */
        loose: z.boolean().default(true),
        /** Head nouns tried after an eponym with none ("von Hippel-Lindau" → "… disease"), loose lookup only. */
        headNouns: z.array(z.string().min(1)).max(5).default(['disease', 'syndrome']),
        /** Distributed readings of coordinations ("breast and ovarian cancer") as extra name lookups. */
        composite: z.boolean().default(true),
        /**
         * λ of the hybrid score of non-exact candidates: (1 − λ)·dense + λ·char-3-gram TF-IDF
         * cosine (src/retrieve/sparse-fusion.ts), over sparsePool × retrieveK dense candidates; 0 turns it off.
         */
        sparseWeight: z.number().min(0).max(1).default(0.3),
        /** Dense candidates the sparse score re-ranks, as a multiple of retrieveK (more: recall, less: speed). */
        sparsePool: z.number().int().min(1).max(4).default(2),
        /** Senses of undefined short forms from the shipped clinical abbreviation inventory as extra candidates. */
        abbreviationInventory: z.boolean().default(false),
        /** Expand short forms inside a mention and inside long forms, and accept long forms by word initials. */
        abbreviationsInside: z.boolean().default(true),
      })
      .default({}),
    /** Ties between exact matches: preferred name over synonym, ancestor over descendant (src/link/hierarchy-preference.ts). */
    hierarchy: z
      .object({
        preferredName: z.boolean().default(true),
        ancestor: z.boolean().default(true),
        /** Score taken off an exact match per unmet preference (0 turns it off). */
        penalty: z.number().min(0).max(0.5).default(0.02),
      })
      .default({}),
  })
  .strict();

export type LinkConfig = z.infer<typeof linkConfigSchema>;
export type LinkConfigInput = z.input<typeof linkConfigSchema>;

export function parseLinkConfig(input: unknown, origin = 'link config'): LinkConfig {
  const parsed = linkConfigSchema.safeParse(input ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError(`${origin}: '${issue.path.join('.') || '(root)'}': ${issue.message}`, 'BAD_CONFIG');
  }
  return parsed.data;
}
