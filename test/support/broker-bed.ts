import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { buildPhenotypeIndex } from './stream-fixtures.ts';

/**
 * What a broker integration test starts in before() and stops in after(): a fresh temp dir, a
 * local broker, a client on it and the small phenotype index under the temp dir. `name` gives
 * the temp dir (`cuilink-<name>-…`) and the client id (`stream-<name>-test`).
 */
export class BrokerBed {
  root!: string;
  broker!: LocalBroker;
  kafka!: KafkaClient;
  indexDir!: string;

  constructor(private readonly name: string) {}

  async start(): Promise<void> {
    this.root = mkdtempSync(join(tmpdir(), `cuilink-${this.name}-`));
    this.broker = await startLocalBroker();
    this.kafka = createKafkaClient({ brokers: this.broker.brokers, clientId: `stream-${this.name}-test`, logLevel: 'nothing' });
    this.indexDir = await buildPhenotypeIndex(join(this.root, 'index'));
  }

  async stop(): Promise<void> {
    await this.broker?.stop();
    rmSync(this.root, { recursive: true, force: true });
  }
}
