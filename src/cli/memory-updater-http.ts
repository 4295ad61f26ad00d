import type { MemoryUpdater } from '../eval/memory-updater.ts';
import { registerMemoryUpdaterInstruments } from '../eval/memory-updater-metrics.ts';
import { startHealthServer } from '../stream/health-server.ts';
import { startTelemetry } from '../telemetry/telemetry.ts';

export interface MemoryUpdaterHttp {
  url: string;
  close(): Promise<void>;
}

/**
 * `/healthz`, `/readyz` and `/metrics` of `cuilink memory updater --port`: the stage's health
 * server and telemetry (Prometheus text) over the updater's stats. Started before the model
 * loads, neither live nor ready until the updater runs, so a startup probe gives the load its time.
 */
export async function startMemoryUpdaterHttp(options: { host: string; port: number; updater: () => MemoryUpdater | undefined; log: (line: string) => void }): Promise<MemoryUpdaterHttp> {
  const telemetry = await startTelemetry({
    serviceName: 'cuilink-memory-updater',
    prometheus: true,
    onShutdownError: (error) => options.log(`memory-updater: metrics could not be flushed at shutdown (${(error as Error).message})`),
  });
  registerMemoryUpdaterInstruments(() => options.updater()?.stats, telemetry.meter);
  try {
    const server = await startHealthServer({
      host: options.host,
      port: options.port,
      live: () => options.updater()?.live ?? false,
      ready: () => options.updater()?.ready ?? false,
      metrics: telemetry.prometheusHandler,
    });
    return {
      url: server.url,
      close: async () => {
        await server.close();
        await telemetry.shutdown();
      },
    };
  } catch (error) {
    await telemetry.shutdown();
    throw error;
  }
}
