import { CANDIDATE_SOURCES } from '../link/linking-stages.ts';
import { metrics, type Counter, type Histogram, type Meter } from '@opentelemetry/api';

/** Phases of a record's trip through the stage whose durations are recorded. */
export type StagePhase = 'decode' | 'link' | 'produce' | 'commit';

export interface StageCounts {
  consumed: number;
  produced: number;
  deadLettered: number;
  deadLetteredByCode: Record<string, number>;
  /** Linking batches that completed; one that failed is counted when it is read again and links. */
  batches: number;
  /** Mentions of the notes linked (not of dead-lettered notes, nor of failed attempts). */
  mentionsLinked: number;
  retries: number;
  /** Produced mentions by the stage that chose their concept (`via`), NIL ones under `nil`. */
  linksByStage: Record<string, number>;
  /** Mentions also sent to the review topic. */
  reviewed: number;
  /** Label requests produced, by stream (learn, measure). */
  labelRequests: Record<string, number>;
  /** Times the dead-letter-rate breaker opened. */
  deadLetterBreakerTrips: number;
  /** Review records and label requests left out, by `kind/reason` (SIDE_RECORD_DROPS). */
  sideRecordsDropped: Record<string, number>;
}

/**
 * Why a review record or label request can be left out while its note's output goes through: its
 * topic cannot take it (ids and label cannot be cut), or its schema cannot carry it. Sent, either
 * would be refused on every attempt and stop the stage on that note.
 */
export const SIDE_RECORD_DROPS = [
  { kind: 'review', reason: 'too_large' },
  { kind: 'label_request', reason: 'too_large' },
  { kind: 'label_request', reason: 'not_encodable' },
] as const;
export type SideRecordDrop = (typeof SIDE_RECORD_DROPS)[number];

/**
 * Dead-letter codes the stage can emit: each one's counter series exists from start, at 0. The
 * same codes as src/stream/dead-letter-policy.ts RECORD_FAULT_CODES, the only ones dead-lettered
 * (a unit test keeps the two equal; this folder may not import src/stream).
 */
export const DEAD_LETTER_CODES = [
  'EMPTY_RECORD', 'UNKNOWN_SCHEMA', 'UNDECODABLE', 'INCOMPATIBLE_SCHEMA', 'BAD_TEXT_ENCODING', 'RECORD_TOO_LARGE', 'BAD_NOTE', 'EMPTY_NOTE',
  'NOTE_TOO_LARGE', 'BAD_MENTION', 'BAD_SPAN', 'SPAN_TEXT_MISMATCH', 'OUTPUT_TOO_LARGE',
] as const;
/** Operations the stage retries: each one's counter series exists from start, at 0. */
export const RETRIED_OPERATIONS = ['decode', 'link', 'deliver'] as const;

/**
 * The stage's counters and histograms, as OpenTelemetry instruments (exported over OTLP and as
 * Prometheus text) and as plain numbers for `stats()` and the run summary. Attributes are
 * low-cardinality codes and phase names only, never note content.
 */
export class StageMetrics {
  readonly counts: StageCounts = { consumed: 0, produced: 0, deadLettered: 0, deadLetteredByCode: {}, batches: 0, mentionsLinked: 0, retries: 0, linksByStage: {}, reviewed: 0, labelRequests: {}, deadLetterBreakerTrips: 0, sideRecordsDropped: {} };
  private readonly consumed: Counter;
  private readonly produced: Counter;
  private readonly deadLettered: Counter;
  private readonly retries: Counter;
  private readonly links: Counter;
  private readonly reviewed: Counter;
  private readonly labelRequests: Counter;
  private readonly sideRecordsDropped: Counter;
  private readonly batchMentions: Histogram;
  private readonly phaseSeconds: Histogram;
  private readonly endToEndSeconds: Histogram;
  private readonly breakerTrips: Counter;
  private breakerOpen = false;

  constructor(inFlightMentions: () => number, meter: Meter = metrics.getMeter('cuilink.stream')) {
    this.consumed = meter.createCounter('cuilink.stream.consumed', { description: 'Input records consumed' });
    this.produced = meter.createCounter('cuilink.stream.produced', { description: 'LinkedNote records produced and acknowledged' });
    this.deadLettered = meter.createCounter('cuilink.stream.dead_lettered', { description: 'Input records sent to the dead-letter topic, by error code' });
    this.retries = meter.createCounter('cuilink.stream.retries', { description: 'Retried operations after retriable errors, by operation' });
    this.reviewed = meter.createCounter('cuilink.stream.reviewed', { description: 'Mentions also sent to the review topic (low confidence or NIL)' });
    this.labelRequests = meter.createCounter('cuilink.stream.label_requests', { description: 'Mentions asked of annotators, by stream: learn (chosen by need under the budget) or measure (random slice)' });
    this.sideRecordsDropped = meter.createCounter('cuilink.stream.side_records_dropped', { description: 'Review records and label requests left out while their note was produced: too large for their topic, or not encodable, by kind and reason' });
    this.links = meter.createCounter('cuilink.stream.links', { description: 'Mentions produced, by the linking stage that chose the concept (via; NIL ones as nil)' });
    this.batchMentions = meter.createHistogram('cuilink.stream.batch.mentions', {
      description: 'Mentions linked per completed linking batch',
      advice: { explicitBucketBoundaries: [1, 4, 16, 32, 64, 128, 256, 512, 1024] },
    });
    // Series at 0 from start, so that increase()/rate() alerts see the first event after a restart.
    for (const code of DEAD_LETTER_CODES) this.deadLettered.add(0, { code });
    for (const operation of RETRIED_OPERATIONS) this.retries.add(0, { operation });
    for (const stage of [...CANDIDATE_SOURCES, 'nil']) this.links.add(0, { stage });
    for (const drop of SIDE_RECORD_DROPS) this.sideRecordsDropped.add(0, { ...drop });
    // Units in the names (Prometheus: cuilink_stream_phase_duration_seconds, ..._end_to_end_lag_seconds).
    this.phaseSeconds = meter.createHistogram('cuilink.stream.phase_duration_seconds', {
      description: 'Duration of a stage phase (decode, link, produce, commit)',
      unit: 's',
      advice: { explicitBucketBoundaries: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] },
    });
    this.endToEndSeconds = meter.createHistogram('cuilink.stream.end_to_end_lag_seconds', {
      description: 'Input record timestamp to output acknowledgement',
      unit: 's',
      advice: { explicitBucketBoundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] },
    });
    // cuilink_stream_dead_letter_breaker_open (0/1) and ..._trips_total: src/stream/dead-letter-breaker.ts.
    const breakerOpen = meter.createObservableGauge('cuilink.stream.dead_letter_breaker_open', { description: '1 while the dead-letter-rate breaker is open (too many of the latest records dead-lettered: the stage is paused, unready and commits nothing), else 0' });
    breakerOpen.addCallback((result) => result.observe(this.breakerOpen ? 1 : 0));
    this.breakerTrips = meter.createCounter('cuilink.stream.dead_letter_breaker_trips', { description: 'Times the dead-letter-rate breaker opened' });
    this.breakerTrips.add(0);
    const inFlight = meter.createObservableGauge('cuilink.stream.in_flight_mentions', { description: 'Mentions queued or being linked' });
    inFlight.addCallback((result) => result.observe(inFlightMentions()));
    const lag = meter.createObservableGauge('cuilink.stream.consumer_lag', { description: 'Records in an input partition after the stage’s committed offset (latest high watermark − committed), by topic and partition' });
    lag.addCallback((result) => {
      for (const [key, value] of this.positions) result.observe(this.lagOf(value), { topic: value.topic, partition: key.slice(key.lastIndexOf('/') + 1) });
      // The SDK keeps exporting an attribute set no longer observed at its last value: a partition
      // another instance holds now reads 0 here (none of its backlog is this one's), not a stale lag.
      for (const [key, topic] of this.released) result.observe(0, { topic, partition: key.slice(key.lastIndexOf('/') + 1) });
    });
  }

  /** Per input partition this instance holds: its last commit, and the high watermark seen with it. */
  private readonly positions = new Map<string, { topic: string; partition: number; committed: bigint; highWatermark: bigint }>();
  /** Partitions this instance reported and no longer holds (`topic/partition` → topic): exported at 0. */
  private readonly released = new Map<string, string>();
  /**
   * The consumer's latest high watermark of a partition (refreshed on a timer). Read when the gauge
   * is collected: a partition that stopped committing (stuck, paused) shows its backlog growing.
   */
  highWatermarkOf?: (topic: string, partition: number) => string | undefined;

  /** A commit of one input partition, with the high watermark of the fetch it came from. */
  recordLag(topic: string, partition: number, highWatermark: string, committed: string): void {
    this.positions.set(`${topic}/${partition}`, { topic, partition, committed: BigInt(committed), highWatermark: BigInt(highWatermark) });
    this.released.delete(`${topic}/${partition}`);
  }

  /** After a rebalance: partitions now another instance's are no longer this one's lag to report. */
  retainPartitions(assignment: readonly { topic: string; partitions: readonly number[] }[]): void {
    const held = new Set(assignment.flatMap((a) => a.partitions.map((p) => `${a.topic}/${p}`)));
    for (const [key, value] of [...this.positions]) {
      if (held.has(key)) continue;
      this.positions.delete(key);
      this.released.set(key, value.topic);
    }
  }

  private lagOf(position: { topic: string; partition: number; committed: bigint; highWatermark: bigint }): number {
    const latest = this.highWatermarkOf?.(position.topic, position.partition);
    const high = latest === undefined ? position.highWatermark : BigInt(latest) > position.highWatermark ? BigInt(latest) : position.highWatermark;
    return Math.max(0, Number(high - position.committed));
  }

  /** Lag per `topic/partition` (stats, tests). */
  get consumerLag(): Record<string, number> {
    return Object.fromEntries([...this.positions].map(([key, value]) => [key, this.lagOf(value)]));
  }

  recordConsumed(n = 1): void {
    this.counts.consumed += n;
    this.consumed.add(n);
  }

  recordProduced(n: number): void {
    this.counts.produced += n;
    this.produced.add(n);
  }

  /** `stage`: a LinkedMention's via (src/link/linking-stages.ts) or `nil`: a closed, low-cardinality set. */
  recordLinks(stage: string, n: number): void {
    this.counts.linksByStage[stage] = (this.counts.linksByStage[stage] ?? 0) + n;
    this.links.add(n, { stage });
  }

  recordLabelRequested(stream: 'learn' | 'measure'): void {
    this.counts.labelRequests[stream] = (this.counts.labelRequests[stream] ?? 0) + 1;
    this.labelRequests.add(1, { stream });
  }

  recordSideRecordsDropped(drop: SideRecordDrop, n = 1): void {
    const key = `${drop.kind}/${drop.reason}`;
    this.counts.sideRecordsDropped[key] = (this.counts.sideRecordsDropped[key] ?? 0) + n;
    this.sideRecordsDropped.add(n, { kind: drop.kind, reason: drop.reason });
  }

  recordReviewed(n: number): void {
    this.counts.reviewed += n;
    this.reviewed.add(n);
  }

  recordDeadLettered(code: string): void {
    this.counts.deadLettered++;
    this.counts.deadLetteredByCode[code] = (this.counts.deadLetteredByCode[code] ?? 0) + 1;
    this.deadLettered.add(1, { code });
  }

  /** The dead-letter-rate breaker's state (wire to DeadLetterBreaker.onChange); counts each opening. */
  recordDeadLetterBreaker(open: boolean): void {
    if (open && !this.breakerOpen) {
      this.counts.deadLetterBreakerTrips++;
      this.breakerTrips.add(1);
    }
    this.breakerOpen = open;
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
