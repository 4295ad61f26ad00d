import type { EncoderStats } from './encoder-stats.ts';
import { rowsIndependentOfBatch, type ModelManifest, type Precision } from './manifest.ts';
import type { OpenedModel } from './model-directory.ts';

/** What every encoder of a model directory exposes: identity, precision, provider, counters. */
export abstract class EncoderBase {
  readonly stats: EncoderStats = { sequences: 0, batches: 0, runMs: 0 };
  protected readonly model: OpenedModel;

  protected constructor(model: OpenedModel) {
    this.model = model;
  }

  get manifest(): ModelManifest {
    return this.model.manifest;
  }

  get modelId(): string {
    return this.model.manifest.id;
  }

  /** Hash of the manifest, which lists every shipped file's checksum: the model's identity. */
  get modelSha256(): string {
    return this.model.modelSha256;
  }

  get precision(): Precision {
    return this.model.precision;
  }

  /** Whether a sequence's output is independent of the batch it runs in (rowsIndependentOfBatch). */
  get batchIndependent(): boolean {
    return rowsIndependentOfBatch(this.model.manifest, this.model.precision);
  }

  get provider(): 'cuda' | 'cpu' {
    return this.model.session.provider;
  }

  protected count(sequences: number, batches: number, runMs: number): void {
    this.stats.sequences += sequences;
    this.stats.batches += batches;
    this.stats.runMs += runMs;
  }

  close(): Promise<void> {
    return this.model.session.close();
  }
}
