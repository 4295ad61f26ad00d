import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureTopics } from '../../src/stream/topics.ts';
import { createRecordCodec } from '../../src/stream/avro/index.ts';
import type { StageConfigInput } from '../../src/stream/stage-config.ts';
import { BrokerBed } from './broker-bed.ts';
import { StageProcess } from './stage-process.ts';
import { noteMessage, publish, syntheticNotes, TopicCollector, waitFor } from './stream-fixtures.ts';

// The stage-process tests' harness (stream-fencing*.test.ts): real stage processes
// (`cuilink run --config`) on a real broker, over the small phenotype index.

export interface Topics {
  input: string;
  output: string;
  deadLetter: string;
}

/**
 * A BrokerBed that starts stage processes and keeps them: stop() kills those still running and,
 * with CUILINK_TEST_LOG_DIR=<dir>, keeps every stage process's log lines there (one file per process).
 */
export class StageFleet extends BrokerBed {
  readonly codec = createRecordCodec();
  readonly running: { name: string; stage: StageProcess }[] = [];

  override async stop(): Promise<void> {
    for (const { stage } of this.running) {
      if (stage.child.exitCode === null && stage.child.signalCode === null) {
        stage.kill('SIGCONT');
        stage.kill('SIGKILL');
      }
    }
    const logDir = process.env.CUILINK_TEST_LOG_DIR;
    if (logDir) {
      mkdirSync(logDir, { recursive: true });
      for (const { name, stage } of this.running) writeFileSync(join(logDir, `${name}.log`), `${stage.lines.join('\n')}\n`);
    }
    await super.stop();
  }

  /** Input and output with `partitions` partitions, the dead-letter topic with one. */
  async topicsFor(name: string, partitions: number): Promise<Topics> {
    const t = { input: `${name}.in`, output: `${name}.out`, deadLetter: `${name}.dead` };
    await ensureTopics(this.kafka, [t.input, t.output], { partitions });
    await ensureTopics(this.kafka, [t.deadLetter], { partitions: 1 });
    return t;
  }

  stageConfig(name: string, t: Topics, extra: Partial<StageConfigInput> = {}): StageConfigInput {
    return {
      brokers: this.broker.brokers,
      groupId: `${name}-group`,
      topics: t,
      // Small batches: many produce/commit steps, so a signal lands between them.
      batching: { maxMentions: 6, maxWaitMs: 2, maxInFlightMentions: 24 },
      consumer: { sessionTimeoutMs: 6000, heartbeatIntervalMs: 1000 },
      drainTimeoutMs: 20_000,
      http: { host: '127.0.0.1', port: 0 },
      telemetry: { kafkaLogLevel: 'warn', prometheus: true },
      linker: { indexDir: this.indexDir, threads: 1, rerankerDir: false },
      ...extra,
    };
  }

  startStage(name: string, config: StageConfigInput): StageProcess {
    const stage = new StageProcess(this.root, name, config);
    this.running.push({ name, stage });
    return stage;
  }

  async publishNotes(topic: string, prefix: string, count: number): Promise<string[]> {
    const notes = syntheticNotes(count, prefix);
    await publish(this.kafka, topic, await Promise.all(notes.map((n) => noteMessage(this.codec, n))));
    return notes.map((n) => n.noteId);
  }

  /** Committed group offsets per input partition (-1 where none). */
  async committed(groupId: string, topic: string): Promise<{ partition: number; offset: number }[]> {
    const admin = this.kafka.admin();
    try {
      return (await admin.committedOffsets(groupId, topic)).map((p) => ({ partition: p.partition, offset: Number(p.offset) }));
    } finally {
      await admin.close();
    }
  }

  /** waitFor, with a failure message made when it fails (the stages' last log lines then, not at the call). */
  async until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: () => string): Promise<void> {
    try {
      await waitFor(condition, timeoutMs, 'the condition');
    } catch (error) {
      throw new Error(`${(error as Error).message.replace('the condition', '')}${what()}\n${await this.countersOf()}`, { cause: error });
    }
  }

  /** Each running stage's consumed/produced counters and /readyz, for a failure message. */
  async countersOf(): Promise<string> {
    const rows = await Promise.all(
      this.running.map(async ({ name, stage }) => {
        if (stage.child.exitCode !== null || stage.child.signalCode !== null) return `${name}: exited`;
        try {
          const [consumed, produced] = await Promise.all([stage.counter('cuilink_stream_consumed_total'), stage.counter('cuilink_stream_produced_total')]);
          return `${name}: consumed ${consumed}, produced ${produced}`;
        } catch (error) {
          return `${name}: ${(error as Error).message}`;
        }
      }),
    );
    return rows.join('; ');
  }
}

/** How often each key appears among the collected records. */
function keyCounts(out: TopicCollector): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of out.records) counts.set(r.key!, (counts.get(r.key!) ?? 0) + 1);
  return counts;
}

/** Lost and duplicated note ids among `sent`, plus ids that were never sent. */
export function tally(out: TopicCollector, sent: string[]): { lost: string[]; duplicated: [string, number][]; unknown: string[] } {
  const counts = keyCounts(out);
  const expected = new Set(sent);
  return {
    lost: sent.filter((id) => !counts.has(id)),
    duplicated: [...counts].filter(([, n]) => n > 1),
    unknown: [...counts.keys()].filter((id) => !expected.has(id)),
  };
}

/** The last log lines of each stage, for an assertion message. */
export function logsOf(stages: Record<string, StageProcess>, lines = 15): string {
  return Object.entries(stages)
    .map(([name, stage]) => `--- ${name} (exit ${stage.child.exitCode ?? stage.child.signalCode ?? 'running'}):\n${stage.lines.slice(-lines).join('\n')}`)
    .join('\n');
}

/** A process's exit within `timeoutMs`: its code, null when a signal ended it, 'running' when it did not end. */
export async function exitWithin(stage: StageProcess, timeoutMs: number): Promise<number | null | 'running'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'running'>((resolve) => (timer = setTimeout(() => resolve('running'), timeoutMs)));
  try {
    return await Promise.race([stage.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The last 'joined consumer group' line's assigned partitions (none before the first join). */
export function assignedPartitions(stage: StageProcess): number[] {
  const line = stage.lines.filter((l) => l.includes('"message":"joined consumer group"')).at(-1);
  if (line === undefined) return [];
  const { assignment } = JSON.parse(line) as { assignment?: { partitions: number[] }[] };
  return (assignment ?? []).flatMap((a) => a.partitions);
}
