import { InputError } from '../kb/errors.ts';
import type { TokenizedSequence } from '../text/tokenizer.ts';
import { lengthBatches } from './length-batches.ts';
import type { ModelManifest, Precision } from './manifest.ts';
import { openModelDirectory, type EncoderOptions, type OpenedModel } from './model-directory.ts';

/** Counters a benchmark or a metrics exporter reads. */
export interface EncoderStats {
  sequences: number;
  batches: number;
  /** Milliseconds inside session.run, summed. */
  runMs: number;
}

/**
 * Text → unit vector with the bi-encoder of a model directory: tokenized here, length-bucketed
 * batches run in the session's worker, pooled and normalized as the manifest says.
 */
export class BiEncoder {
  readonly stats: EncoderStats = { sequences: 0, batches: 0, runMs: 0 };
  private readonly model: OpenedModel;

  private constructor(model: OpenedModel) {
    this.model = model;
  }

  static async open(dir: string, options: EncoderOptions = {}): Promise<BiEncoder> {
    const model = await openModelDirectory(dir, 'bi-encoder', options);
    if (model.manifest.pooling === 'mean' && !model.manifest.inputNames.includes('attention_mask')) {
      await model.session.close();
      throw new InputError(`${dir}: mean pooling needs the attention_mask input`, 'BAD_MODEL');
    }
    return new BiEncoder(model);
  }

  get manifest(): ModelManifest {
    return this.model.manifest;
  }

  get modelId(): string {
    return this.model.manifest.id;
  }

  get dims(): number {
    return this.model.manifest.dims!;
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

  tokenize(text: string): TokenizedSequence {
    return this.model.tokenizer.encode(text, this.model.manifest.maxLength, this.model.markerId);
  }

  async encode(texts: string[]): Promise<Float32Array[]> {
    const { manifest, tokenizer, session, batchLimits } = this.model;
    const sequences = texts.map((t) => this.tokenize(t));
    const out = new Array<Float32Array>(texts.length);
    const batches = lengthBatches(sequences, manifest.inputNames, tokenizer.padId, batchLimits);
    const dims = this.dims;
    await Promise.all(
      batches.map(async (batch) => {
        const reply = await session.run(batch.feeds, manifest.outputName, manifest.pooling!, manifest.normalize ?? true);
        if (reply.dims[1] !== dims) throw new InputError(`${this.model.dir}: model returned ${reply.dims[1]} dims, manifest says ${dims}`, 'BAD_MODEL');
        batch.order.forEach((position, row) => {
          out[position] = reply.data.slice(row * dims, (row + 1) * dims);
        });
        this.stats.batches++;
        this.stats.runMs += reply.runMs;
      }),
    );
    this.stats.sequences += texts.length;
    return out;
  }

  close(): Promise<void> {
    return this.model.session.close();
  }
}
