import { InputError } from '../kb/errors.ts';
import { lengthBatches } from './length-batches.ts';
import type { EncoderStats } from './bi-encoder.ts';
import type { ModelManifest, Precision } from './manifest.ts';
import { openModelDirectory, type EncoderOptions, type OpenedModel } from './model-directory.ts';

/**
 * (mention query, candidate text) → relevance logit with the cross-encoder of a model
 * directory. All pairs of a call share length-bucketed batches.
 */
export class CrossEncoder {
  readonly stats: EncoderStats = { sequences: 0, batches: 0, runMs: 0 };
  private readonly model: OpenedModel;

  private constructor(model: OpenedModel) {
    this.model = model;
  }

  static async open(dir: string, options: EncoderOptions = {}): Promise<CrossEncoder> {
    return new CrossEncoder(await openModelDirectory(dir, 'cross-encoder', options));
  }

  get manifest(): ModelManifest {
    return this.model.manifest;
  }

  get modelId(): string {
    return this.model.manifest.id;
  }

  get modelSha256(): string {
    return this.model.modelSha256;
  }

  get precision(): Precision {
    return this.model.precision;
  }

  get provider(): 'cuda' | 'cpu' {
    return this.model.session.provider;
  }

  async score(pairs: { query: string; candidate: string }[]): Promise<Float32Array> {
    const { manifest, tokenizer, session, batchLimits, markerId } = this.model;
    const sequences = pairs.map((p) => tokenizer.encodePair(p.query, p.candidate, manifest.maxLength, markerId));
    const logits = new Float32Array(pairs.length);
    const batches = lengthBatches(sequences, manifest.inputNames, tokenizer.padId, batchLimits);
    await Promise.all(
      batches.map(async (batch) => {
        const reply = await session.run(batch.feeds, manifest.outputName, 'none', false);
        const perRow = reply.data.length / batch.order.length;
        if (!Number.isInteger(perRow) || perRow < 1) throw new InputError(`${this.model.dir}: unexpected logits shape [${reply.dims.join(', ')}]`, 'BAD_MODEL');
        // [batch, 1] (one relevance logit) or [batch, 2] (softmax classes: the positive one is last).
        batch.order.forEach((position, row) => {
          logits[position] = perRow === 1 ? reply.data[row]! : reply.data[row * perRow + perRow - 1]! - reply.data[row * perRow]!;
        });
        this.stats.batches++;
        this.stats.runMs += reply.runMs;
      }),
    );
    this.stats.sequences += pairs.length;
    return logits;
  }

  close(): Promise<void> {
    return this.model.session.close();
  }
}
