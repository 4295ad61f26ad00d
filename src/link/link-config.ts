import { z } from 'zod';
import { InputError } from '../kb/errors.ts';
import { pathOfNonFinite } from '../kb/safe-json.ts';

/**
 * Linking options, validated once at entry (CLI flags, config file or the stream's config).
 *
 * The defaults below are the ONE place a linking default lives, the reranker's included (the
 * shipped cross-encoder's manifest carries none). Precedence, later winning: these defaults → the
 * link config an operator gives (`--link-config FILE`, or `link` in the stage config), key by key.
 * Defaults are chosen on the tune split of NCBI-disease train (src/eval/tuning-split.ts;
 * bench/results/accuracy-tuning.json, docs/accuracy.md); dev is reported only (bench/results/link.json,
 * accuracy-ablation.json). The rerank defaults (top 3, weight 0.3, ambiguous mentions, margin 0.05)
 * were re-derived there for the shipped cross-encoder (its pipeline had picked 0.1 / 0.05 on dev:
 * manifest metrics.chosenRerank); a swapped reranker (`--reranker DIR`) is calibrated differently:
 * give its settings in a link config.
 */
/**
 * The NIL threshold on confidence when the calibration file records none (`nilConfidence`): the
 * threshold files fit before 2026-11-26 (late evening) were shipped with, chosen by the rule of
 * docs/confidence.md; files since record their own (the shipped one decides NIL on `nilInKb` and
 * records 0 here). A linker uses the file's thresholds unless the link config names `nil.confidence`
 * or `nil.inKb`.
 */
export const DEFAULT_NIL_CONFIDENCE = 0.175;

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
        /**
         * `ambiguous`: only mentions whose top-1 is not a unique exact match and whose top-1/top-2
         * margin is small. `inexact`: every mention but a unique true exact name match (fuzzy
         * lookups, abbreviations and dense hits alike).
         */
        policy: z.enum(['always', 'inexact', 'ambiguous', 'never']).default('ambiguous'),
        /**
         * Candidates the cross-encoder scores. With the margin, chosen on the tune split's
         * candidates {2, 3, 5} × margin {0.02, 0.05, 0.1} grid (bench/results/accuracy-tuning.json,
         * `rerank grid` rows): 3 / 0.05 and 5 / 0.05 share the best acc@1 (0.857); 3 scores fewer pairs.
         */
        candidates: z.number().int().min(2).max(100).default(3),
        /** Retrieval-score margin under which a mention counts as ambiguous (see candidates). */
        margin: z.number().min(0).max(2).default(0.05),
        /**
         * Weight of the cross-encoder against retrieval: final = w·sigmoid(logit) + (1-w)·retrieval,
         * so a reranker never throws away a strong retrieval signal entirely.
         */
        weight: z.number().min(0).max(1).default(0.3),
        /**
         * Score only the candidates that can still come first (src/link/rerank-pruning.ts): same
         * top-1, fewer cross-encoder pairs (pair scores are pure: each pair alone with int8, rows that
         * do not interact with fp16/fp32).
         */
        prune: z.boolean().default(true),
        /**
         * With a cross-encoder that reads the note: the window a mention repeated in its note (same
         * NER label, same text as the models see it) is read in. `first`: its first occurrence's,
         * so a note reranks each repeated mention once and the cache answers the repeats (one sense
         * per discourse); `own`: each occurrence's own. Chosen on the tune split by the rule of
         * bench/context-window-per-note.ts (results/context-window-per-note.json): with the context
         * cross-encoder, tune acc@1 0.888 (`first`) against 0.886 (`own`), first pass 1.14–1.18×
         * faster in two runs.
         */
        repeatWindow: z.enum(['own', 'first']).default('first'),
      })
      .strict()
      .default({}),
    nil: z
      .object({
        /** Mentions whose best final score is below this are NIL (candidates kept). */
        threshold: z.number().min(-1).max(1).default(0),
        /**
         * Mentions whose calibrated confidence is below this are NIL (candidates kept); only with a
         * calibration. Unset: the calibration file's own threshold (openLinker), else the default.
         */
        confidence: z.number().min(0).max(1).default(DEFAULT_NIL_CONFIDENCE),
        /**
         * Mentions whose calibrated probability that their concept is in the KB at all (`inKb`:
         * the calibration's non-entity and NIL parts) is below this are NIL (candidates kept); only
         * with a calibration that has such a part. Unset: the calibration file's own threshold (openLinker), else 0.
         */
        inKb: z.number().min(0).max(1).default(0),
      })
      .strict()
      .default({}),
    /** NER label → allowed semantic types; labels not listed are not filtered. */
    typeFilter: z.record(z.string(), z.array(z.string()).min(1)).default({}),
    /**
     * How a labelled-mention memory (--memory) weighs its evidence (src/link/memory-evidence.ts).
     * Defaults chosen on the tune part of the NCBI-disease train split (memory from its learn part,
     * reranker off, coordinate search in bench/memory-tuning.ts): tune acc@1 0.808 → 0.882.
     */
    memory: z
      .object({
        /** Memory votes the winning concept needs before the memory decides a link. */
        minSupport: z.number().min(0).default(1),
        /** Share of all votes (KB pseudo-votes included) the winner must exceed. */
        majority: z.number().min(0).max(1).default(0.5),
        /** Pseudo-votes of a concept whose KB name matches the mention exactly. */
        kbVotes: z.number().min(0).default(4),
        /** Prototypes fetched per mention from the memory's HNSW graph (0: surface table only). */
        neighbors: z.number().int().min(0).max(1000).default(10),
        /** Prototypes of other surfaces vote only from this similarity up. */
        denseThreshold: z.number().min(-1).max(1).default(0.85),
        /** A dense vote is worth weight · similarity of an exact-surface label. */
        denseWeight: z.number().min(0).default(0.25),
        /** Tie-break weight of a candidate's share of votes when memory did not decide. */
        bonus: z.number().min(0).default(0.05),
        /** Labels may link to ids the KB lacks (named by the id); off: KB concepts only. */
        outsideKb: z.boolean().default(true),
        /** Tie-break weight of the frequency prior (log labels of the concept, scaled to [0, 1]). */
        prior: z.number().min(0).default(0.01),
      })
      .strict()
      .default({}),
    /** Resolve `SF` mentions through `long form (SF)` definitions found in the same note. */
    abbreviations: z.boolean().default(true),
    /**
     * A mention that is exactly one concept's KB name uses that name's stored index vector instead
     * of being encoded (src/retrieve/exact-name-vectors.ts): same top-1, dense tail from the name.
     */
    exactVectors: z.boolean().default(true),
    /**
     * The link cache (src/link/link-cache.ts): finished mention links by (query, context window of
     * a model that reads one, label, versions, config). Sizes only; they never change a link.
     */
    cache: z
      .object({
        /** Most mentions held; 0 turns the cache off. */
        maxEntries: z.number().int().min(0).max(100_000_000).default(100_000),
        /** Most estimated bytes held. */
        maxBytes: z.number().int().min(0).default(64 * 2 ** 20),
      })
      .strict()
      .default({}),
    /**
     * Query-side fixes of issue 14 (bench/results/accuracy-ablation.json has each on and off;
     * chosen on the tune split of NCBI-disease train).
     */
    query: z
      .object({
        /** Second-chance name lookup under a looser key: plurals, British spelling, word order, roman numerals, Greek letters. */
        loose: z.boolean().default(true),
        /**
         * Head nouns tried after an eponym with none ("von Hippel-Lindau" → "… disease"), loose lookup
         * only. Off by default: tune ±0, learn +1 (src/link/linking-stages.ts); e.g. ["disease", "syndrome"].
         */
        headNouns: z.array(z.string().min(1)).max(5).default([]),
        /** Third-chance lookup of a name that differs only by qualifier words ("Hereditary … Syndrome"), never for "X or Y". */
        unqualified: z.boolean().default(true),
        /** Modes of inheritance read as "hereditary" ("autosomal recessive disorder" → "Hereditary Diseases"), loose lookup, before the unqualified one. */
        inheritance: z.boolean().default(true),
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
        /** Names other vocabularies give the KB's concepts (index build --xref-names), looked up when no KB name matches. */
        xrefNames: z.boolean().default(true),
      })
      .strict()
      .default({}),
    /** Ties between exact matches: preferred name over synonym, ancestor over descendant (src/link/hierarchy-preference.ts). */
    hierarchy: z
      .object({
        preferredName: z.boolean().default(true),
        ancestor: z.boolean().default(true),
        /** Score taken off an exact match per unmet preference (0 turns it off). */
        penalty: z.number().min(0).max(0.5).default(0.02),
      })
      .strict()
      .default({}),
  })
  .strict();

export type LinkConfig = z.infer<typeof linkConfigSchema>;
export type LinkConfigInput = z.input<typeof linkConfigSchema>;

/** A link config's options with defaults filled in, or its first problem: the key path (dotted) and what is wrong. */
export function checkLinkConfig(input: unknown): { config: LinkConfig } | { path: string; problem: string } {
  // 1e400 reads as Infinity, which number() accepts (with a min only) and the memory's vote shares turn into NaN scores.
  const infinite = pathOfNonFinite(input);
  if (infinite !== undefined) return { path: infinite.join('.'), problem: 'must be a finite number (1e400 and the like read as Infinity)' };
  const parsed = linkConfigSchema.safeParse(input ?? {});
  if (parsed.success) return { config: parsed.data };
  const issue = parsed.error.issues[0]!;
  return { path: issue.path.join('.'), problem: issue.message };
}

export function parseLinkConfig(input: unknown, origin = 'link config'): LinkConfig {
  const checked = checkLinkConfig(input);
  if ('problem' in checked) throw new InputError(`${origin}: '${checked.path || '(root)'}': ${checked.problem}`, 'BAD_CONFIG');
  return checked.config;
}
export type MemoryConfig = LinkConfig['memory'];
