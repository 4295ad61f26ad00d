import { InputError } from '../kb/errors.ts';
import type { TokenizedSequence } from '../text/tokenizer.ts';
import { EncoderBase } from './encoder-base.ts';
import { lengthBatches } from './length-batches.ts';
import { openModelDirectory, type EncoderOptions } from './model-directory.ts';

export type { EncoderStats } from './encoder-stats.ts';

/**
 * Text → unit vector with the bi-encoder of a model directory: tokenized here, length-bucketed
 * batches run in the session's worker, pooled and normalized as the manifest says.
 */
export class BiEncoder extends EncoderBase {
  static async open(dir: string, options: EncoderOptions = {}): Promise<BiEncoder> {
    const model = await openModelDirectory(dir, 'bi-encoder', options);
    if (model.manifest.pooling === 'mean' && !model.manifest.inputNames.includes('attention_mask')) {
      await model.session.close();
      throw new InputError(`${dir}: mean pooling needs the attention_mask input`, 'BAD_MODEL');
    }
    return new BiEncoder(model);
  }

  get dims(): number {
    return this.model.manifest.dims!;
  }

  tokenize(text: string): TokenizedSequence {
    return this.model.tokenizer.encode(text, this.model.manifest.maxLength, this.model.markerId);
  }

  async encode(texts: string[], groups?: readonly number[]): Promise<Float32Array[]> {
    const { manifest, tokenizer, session, batchLimits } = this.model;
    const out = new Array<Float32Array>(texts.length);
    const batches = lengthBatches(texts.map((t) => this.tokenize(t)), manifest.inputNames, tokenizer.padId, batchLimits, groups);
    const dims = this.dims;
    await Promise.all(
      batches.map(async (batch) => {
        const reply = await session.run(batch.feeds, manifest.outputName, manifest.pooling!, manifest.normalize ?? true);
        if (reply.dims[1] !== dims) throw new InputError(`${this.model.dir}: model returned ${reply.dims[1]} dims, manifest says ${dims}`, 'BAD_MODEL');
        batch.order.forEach((position, row) => {
          out[position] = reply.data.subarray(row * dims, (row + 1) * dims);
        });
        this.count(0, 1, reply.runMs);
      }),
    );
    this.count(texts.length, 0, 0);
    return out;
  }
}
