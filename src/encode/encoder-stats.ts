/** Counters a benchmark or a metrics exporter reads. */
export interface EncoderStats {
  sequences: number;
  batches: number;
  /** Milliseconds inside session.run, summed. */
  runMs: number;
}
