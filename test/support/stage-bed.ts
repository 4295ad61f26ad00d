import { startStageRuntime, type StageRuntime } from '../../src/cli/stage-runtime.ts';
import { stageConfigSchema, type StageConfigInput } from '../../src/stream/stage-config.ts';
import { BrokerBed } from './broker-bed.ts';

/**
 * A BrokerBed with a real stage in this process (`cuilink run`'s runtime), joined to its group
 * before a test sends it anything; stop() closes the stage before the broker.
 */
export class StageBed extends BrokerBed {
  private runtime: StageRuntime | undefined;

  /** `config` without brokers: the bed's broker, an HTTP server on a free loopback port and quiet logs are added. */
  async startStage(config: Omit<StageConfigInput, 'brokers'>): Promise<StageRuntime> {
    const parsed = stageConfigSchema.parse({ brokers: this.broker.brokers, http: { host: '127.0.0.1', port: 0 }, telemetry: { logLevel: 'error', kafkaLogLevel: 'nothing' }, ...config });
    this.runtime = await startStageRuntime(parsed, { logSink: () => {} });
    await this.runtime.stage.whenJoined();
    return this.runtime;
  }

  override async stop(): Promise<void> {
    await this.runtime?.close();
    await super.stop();
  }
}
