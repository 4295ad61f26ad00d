import { metrics, type Counter, type Histogram, type Meter } from '@opentelemetry/api';

/** Phases of a record's trip through the stage whose durations are recorded. */
export type StagePhase = 'decode' | 'link' | 'produce' | 'commit';

export interface StageCounts {
  consumed: number;
  produced: number;
  deadLettered: number;
  deadLetteredByCode: Record<string, number>;
  batches: number;
  mentionsLinked: number;
  retries: number;
}

/**
 * The stage's counters and histograms, as OpenTelemetry instruments (exported over OTLP and as
 * Prometheus text) and as plain numbers for `stats()` and the run summary. Attributes are
 * low-cardinality codes and phase names only, never note content.
 */
export class StageMetrics {
  readonly counts: StageCounts = { consumed: 0, produced: 0, deadLettered: 0, deadLetteredByCode: {}, batches: 0, mentionsLinked: 0, retries: 0 };
  private readonly consumed: Counter;
  private readonly produced: Counter;
  private readonly deadLettered: Counter;
  private readonly retries: Counter;
  private readonly batchMentions: Histogram;
  private readonly phaseSeconds: Histogram;
  private readonly endToEndSeconds: Histogram;

  constructor(inFlightMentions: () => number, meter: Meter = metrics.getMeter('cuilink.stream')) {
    this.consumed = meter.createCounter('cuilink.stream.consumed', { description: 'Input records consumed' });
    this.produced = meter.createCounter('cuilink.stream.produced', { description: 'LinkedNote records produced and acknowledged' });
    this.deadLettered = meter.createCounter('cuilink.stream.dead_lettered', { description: 'Input records sent to the dead-letter topic, by error code' });
    this.retries = meter.createCounter('cuilink.stream.retries', { description: 'Retried operations after retriable errors, by operation' });
    this.batchMentions = meter.createHistogram('cuilink.stream.batch.mentions', {
      description: 'Mentions per linking batch',
      advice: { explicitBucketBoundaries: [1, 4, 16, 32, 64, 128, 256, 512, 1024] },
    });
    this.phaseSeconds = meter.createHistogram('cuilink.stream.phase.duration', {
      description: 'Duration of a stage phase (decode, link, produce, commit)',
      unit: 's',
      advice: { explicitBucketBoundaries: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] },
    });
    this.endToEndSeconds = meter.createHistogram('cuilink.stream.end_to_end_lag', {
      description: 'Input record timestamp to output acknowledgement',
      unit: 's',
      advice: { explicitBucketBoundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] },
    });
    const inFlight = meter.createObservableGauge('cuilink.stream.in_flight_mentions', { description: 'Mentions queued or being linked' });
    inFlight.addCallback((result) => result.observe(inFlightMentions()));
  }

  recordConsumed(n = 1): void {
    this.counts.consumed += n;
    this.consumed.add(n);
  }

  recordProduced(n: number): void {
    this.counts.produced += n;
    this.produced.add(n);
  }

  recordDeadLettered(code: string): void {
    this.counts.deadLettered++;
    this.counts.deadLetteredByCode[code] = (this.counts.deadLetteredByCode[code] ?? 0) + 1;
    this.deadLettered.add(1, { code });
  }

  recordRetry(operation: string): void {
    this.counts.retries++;
    this.retries.add(1, { operation });
  }

  recordBatch(mentions: number): void {
    this.counts.batches++;
    this.counts.mentionsLinked += mentions;
    this.batchMentions.record(mentions);
  }

  recordPhase(phase: StagePhase, seconds: number): void {
    this.phaseSeconds.record(seconds, { phase });
  }

  recordEndToEnd(seconds: number): void {
    this.endToEndSeconds.record(seconds);
  }
}
