import type { KafkaClient } from '../../stream/kafka/client-types.ts';
import type { RecordCodec } from '../../stream/avro/record-codec.ts';
import { requireTopics } from '../../stream/topics.ts';
import type { OntologyView } from '../metrics/ontology-view.ts';
import { startEvaluatorService, type EvaluatorServiceOptions, type RunningEvaluator } from './evaluator-service.ts';
import { KafkaEvaluatorSource, type SkippedCounts } from './kafka-evaluator-source.ts';

export interface KafkaEvaluatorOptions extends EvaluatorServiceOptions {
  kafka: KafkaClient;
  codec: RecordCodec;
  linkedTopic: string;
  goldTopic: string;
  groupId: string;
}

export interface RunningKafkaEvaluator extends RunningEvaluator {
  /** Records skipped as undecodable, by error code. */
  skipped(): Readonly<SkippedCounts>;
  /** Records read again that the restored state (or the evaluator) already held, ignored. */
  redelivered(): number;
}

/** `cuilink evaluator`: the sidecar service fed from the LinkedNote and GoldMention topics. */
export async function startKafkaEvaluator(view: OntologyView, options: KafkaEvaluatorOptions): Promise<RunningKafkaEvaluator> {
  await requireTopics(options.kafka, [options.linkedTopic, options.goldTopic]);
  const source = new KafkaEvaluatorSource({
    kafka: options.kafka,
    codec: options.codec,
    linkedTopic: options.linkedTopic,
    goldTopic: options.goldTopic,
    groupId: options.groupId,
    log: options.log,
  });
  try {
    const running = await startEvaluatorService(view, source, options);
    return { ...running, skipped: () => source.skipped, redelivered: () => source.redelivered };
  } catch (error) {
    await source.close();
    throw error;
  }
}
