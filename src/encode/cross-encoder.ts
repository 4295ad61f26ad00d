import { InputError } from '../kb/errors.ts';
import { EncoderBase } from './encoder-base.ts';
import { lengthBatches } from './length-batches.ts';
import { openModelDirectory, type EncoderOptions } from './model-directory.ts';

/**
 * (mention query, candidate text) → relevance logit with the cross-encoder of a model
 * directory. All pairs of a call share length-bucketed batches.
 */
export class CrossEncoder extends EncoderBase {
  static async open(dir: string, options: EncoderOptions = {}): Promise<CrossEncoder> {
    return new CrossEncoder(await openModelDirectory(dir, 'cross-encoder', options));
  }

  /** Token and segment ids of one pair exactly as `score` feeds them (distillation data, tests). */
  tokenizePair(query: string, candidate: string): { ids: number[]; typeIds: number[] } {
    const { manifest, tokenizer, markerId } = this.model;
    const s = tokenizer.encodePair(query, candidate, manifest.maxLength, markerId);
    return { ids: Array.from(s.ids), typeIds: Array.from(s.typeIds) };
  }

  async score(pairs: { query: string; candidate: string }[], groups?: readonly number[]): Promise<Float32Array> {
    const { manifest, tokenizer, session, batchLimits, markerId } = this.model;
    const sequences = pairs.map((p) => tokenizer.encodePair(p.query, p.candidate, manifest.maxLength, markerId));
    const logits = new Float32Array(pairs.length);
    const batches = lengthBatches(sequences, manifest.inputNames, tokenizer.padId, batchLimits, groups);
    await Promise.all(
      batches.map(async (batch) => {
        const reply = await session.run(batch.feeds, manifest.outputName, 'none', false);
        const perRow = reply.data.length / batch.order.length;
        // Any other shape (a hidden-state output, [batch, seq, width]) has no logit to read.
        if (reply.dims.length > 2 || reply.dims[0] !== batch.order.length || (perRow !== 1 && perRow !== 2)) throw new InputError(`${this.model.dir}: unexpected logits shape [${reply.dims.join(', ')}]`, 'BAD_MODEL');
        // [batch, 1] (one relevance logit) or [batch, 2] (softmax classes: the positive one is last).
        batch.order.forEach((position, row) => {
          logits[position] = perRow === 1 ? reply.data[row]! : reply.data[row * perRow + perRow - 1]! - reply.data[row * perRow]!;
        });
        this.count(0, 1, reply.runMs);
      }),
    );
    this.count(pairs.length, 0, 0);
    return logits;
  }
}
