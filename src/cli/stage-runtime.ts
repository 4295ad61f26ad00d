import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ensureDefaultIndex } from '../link/default-index.ts';
import { openLinker, type OpenLinkerOptions } from '../link/open-linker.ts';
import type { LinkingCore } from '../link/types.ts';
import { createLogger, type Logger, type LogSink } from '../telemetry/logger.ts';
import { MemorySwapTelemetry } from '../telemetry/memory-swap-telemetry.ts';
import { startTelemetry, type Telemetry } from '../telemetry/telemetry.ts';
import { AvroStageCodec, createRecordCodec, type RecordCodec } from '../stream/avro/index.ts';
import { startHealthServer, type HealthServer } from '../stream/health-server.ts';
import { LinkingStage } from '../stream/linking-stage.ts';
import { schemaRegistryOf, type StageConfig } from '../stream/stage-config.ts';

export interface StageRuntime {
  stage: LinkingStage;
  linker: LinkingCore;
  recordCodec: RecordCodec;
  logger: Logger;
  /** Swaps of the linker's memory and versions that failed to load: logged and counted. */
  memory: MemorySwapTelemetry;
  health?: HealthServer;
  /** Drains the stage, then closes the linker, the HTTP server and telemetry. `true` when the drain finished in time. */
  close(): Promise<boolean>;
}

export interface StartStageRuntimeOptions {
  brokers?: string[];
  logSink?: LogSink;
  /** Extra span processors (tests). */
  spanProcessors?: SpanProcessor[];
  /** Open the linker differently (tests), passing `memory` on to openLinker; openLinker over the configured or default index otherwise. */
  openCore?: (memory: MemoryEvents) => Promise<LinkingCore>;
  /** Once aborted, the start is given up (rejects, after closing what it opened) before the consumer joins its group. */
  signal?: AbortSignal;
}

/** Where the linker reports memory swaps and versions it could not load. */
export type MemoryEvents = Required<Pick<OpenLinkerOptions, 'onMemorySwap' | 'onMemoryError'>>;

/**
 * Everything `cuilink run` holds for the stage's lifetime, started in the order readiness needs:
 * telemetry, HTTP (neither live nor ready), the linker and its index (live once loaded), the codec,
 * the stage (ready once its consumer joined the group).
 */
export async function startStageRuntime(config: StageConfig, options: StartStageRuntimeOptions = {}): Promise<StageRuntime> {
  const logger = createLogger({ level: config.telemetry.logLevel, logPhi: config.telemetry.logPhi, sink: options.logSink, fields: { service: config.telemetry.serviceName } });
  const telemetry: Telemetry = await startTelemetry({
    serviceName: config.telemetry.serviceName,
    otlpEndpoint: config.telemetry.otlpEndpoint,
    prometheus: config.telemetry.prometheus,
    metricExportIntervalMs: config.telemetry.metricExportIntervalMs,
    spanProcessors: options.spanProcessors,
    onShutdownError: (error) => logger.warn('telemetry could not be flushed at shutdown (spans and metrics since the last export are lost)', { cause: error }),
  });
  let stage: LinkingStage | undefined;
  let health: HealthServer | undefined;
  let linker: LinkingCore | undefined;
  const memory = new MemorySwapTelemetry(logger, () => linker?.versions.memoryVersion, telemetry.meter);
  const memoryEvents: MemoryEvents = { onMemorySwap: (version) => memory.swapped(version), onMemoryError: (error, version) => memory.failed(error, version) };
  try {
    if (config.http.enabled) {
      // Not live until the linker is loaded: the startup probe (and the image's HEALTHCHECK start
      // period) gives the load its time, which liveness would cut short (the index is read synchronously).
      health = await startHealthServer({ host: config.http.host, port: config.http.port, live: () => linker !== undefined && (stage?.live ?? true), ready: () => stage?.ready ?? false, metrics: telemetry.prometheusHandler });
      logger.info('http listening', { url: health.url, paths: ['/healthz', '/readyz', '/metrics'] });
    }
    linker = options.openCore ? await options.openCore(memoryEvents) : await openConfiguredLinker(config, logger, memoryEvents);
    logger.info('linker loaded', { ...linker.versions });
    options.signal?.throwIfAborted();
    const recordCodec = createRecordCodec({ schemaRegistry: schemaRegistryOf(config) });
    stage = new LinkingStage({ config, linker, codec: new AvroStageCodec(recordCodec), logger, brokers: options.brokers, tracer: telemetry.tracer, meter: telemetry.meter });
    await stage.start(options.signal);
    const started = { stage, linker, recordCodec };
    let closing: Promise<boolean> | undefined;
    return {
      ...started,
      logger,
      memory,
      health,
      close: () => {
        closing ??= (async () => {
          const drained = await started.stage.stop();
          await started.linker.close();
          await recordCodec.close?.();
          await health?.close();
          await telemetry.shutdown();
          return drained;
        })();
        return closing;
      },
    };
  } catch (error) {
    await stage?.stop().catch(() => {});
    await linker?.close().catch(() => {});
    await health?.close();
    await telemetry.shutdown();
    throw error;
  }
}

async function openConfiguredLinker(config: StageConfig, logger: Logger, memoryEvents: MemoryEvents): Promise<LinkingCore> {
  const indexDir = config.linker.indexDir ?? (await ensureDefaultIndex({ log: (line) => logger.info(line) }));
  return openLinker({ indexDir, modelDir: config.linker.modelDir, rerankerDir: config.linker.rerankerDir, threads: config.linker.threads, provider: config.linker.provider, deviceId: config.linker.deviceId, precision: config.linker.precision, config: config.link, log: (line) => logger.info(line), debug: (line) => logger.debug(line), memoryDir: config.linker.memoryDir, calibration: config.linker.calibration, memoryPollMs: config.linker.memoryPollMs, ...memoryEvents });
}
