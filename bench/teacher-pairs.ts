// What the distillation-pair tools share (bench/distill-pairs.ts, context-distill-pairs.ts): the
// teacher cross-encoder inside a linker, tapped so that every pair it scores is written with its
// token ids, as the linker built them, and its logit.
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import type { CrossEncoder } from '../src/encode/cross-encoder.ts';
import type { Linker } from '../src/link/linker.ts';

/**
 * Taps the linker's cross-encoder: each pair is scored in its own model batch (dynamic int8 scales
 * activations per batch, as the linker scores pairs when pruning) and written to `file` as
 * {q, ids, types, logit}, `q` from `queryOf` at the call.
 */
export function tapTeacherPairs(linker: Linker, file: string, queryOf: () => number): { out: WriteStream; written: () => number } {
  // The linker keeps its parts private; this tool reads pairs at its cross-encoder on purpose.
  const teacher = (linker as unknown as { parts: { reranker?: { scorer: CrossEncoder } } }).parts.reranker?.scorer;
  if (!teacher) throw new Error('the linker has no cross-encoder to distil');
  mkdirSync(dirname(file), { recursive: true });
  const out = createWriteStream(file);
  const score = teacher.score.bind(teacher);
  let written = 0;
  teacher.score = async (pairs) => {
    const logits = await score(pairs, pairs.map((_, i) => i));
    const q = queryOf();
    pairs.forEach((p, i) => {
      const { ids, typeIds } = teacher.tokenizePair(p.query, p.candidate);
      out.write(JSON.stringify({ q, ids, types: typeIds, logit: logits[i] }) + '\n');
    });
    written += pairs.length;
    return logits;
  };
  return { out, written: () => written };
}
