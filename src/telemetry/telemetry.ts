import type { IncomingMessage, ServerResponse } from 'node:http';
import { metrics, trace, type Meter, type Tracer } from '@opentelemetry/api';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { PeriodicExportingMetricReader, type IMetricReader } from '@opentelemetry/sdk-metrics';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';

export interface TelemetryOptions {
  serviceName: string;
  /** OTLP/HTTP base URL (e.g. http://collector:4318); traces and metrics go to /v1/traces and /v1/metrics. */
  otlpEndpoint?: string;
  /** Serve Prometheus text through `prometheusHandler`. */
  prometheus: boolean;
  metricExportIntervalMs?: number;
  /** Extra span processors (tests use an in-memory exporter). */
  spanProcessors?: SpanProcessor[];
  /** A flush that failed at shutdown (a collector that is down): reported here, never thrown. */
  onShutdownError?: (error: unknown) => void;
}

export interface Telemetry {
  tracer: Tracer;
  meter: Meter;
  /** Writes the Prometheus text exposition; absent when Prometheus is off. */
  prometheusHandler?: (req: IncomingMessage, res: ServerResponse) => void;
  /**
   * Flushes exporters and unregisters the providers. Never rejects: telemetry that cannot be
   * flushed (the collector is down while it rolls) must not turn a clean drain into a failed exit.
   */
  shutdown(): Promise<void>;
}

/**
 * Sets up OpenTelemetry for the process with @opentelemetry/sdk-node: no auto-instrumentation
 * (the stage creates its own spans; the linker's cuilink.* spans join them through the active
 * context), OTLP/HTTP export when an endpoint is configured, Prometheus text on demand.
 */
export async function startTelemetry(options: TelemetryOptions): Promise<Telemetry> {
  const spanProcessors: SpanProcessor[] = [...(options.spanProcessors ?? [])];
  const metricReaders: IMetricReader[] = [];
  const endpoint = options.otlpEndpoint?.replace(/\/+$/, '');
  if (endpoint) {
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint}/v1/traces` })));
    metricReaders.push(new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter({ url: `${endpoint}/v1/metrics` }), exportIntervalMillis: options.metricExportIntervalMs ?? 15_000 }));
  }
  let prometheus: PrometheusExporter | undefined;
  if (options.prometheus) {
    prometheus = new PrometheusExporter({ preventServerStart: true });
    metricReaders.push(prometheus);
  }
  const sdk = new NodeSDK({
    serviceName: options.serviceName,
    autoDetectResources: false,
    instrumentations: [],
    spanProcessors,
    metricReaders,
    logRecordProcessors: [],
  });
  sdk.start();
  let stopped: Promise<void> | undefined;
  return {
    tracer: trace.getTracer('cuilink.stream'),
    meter: metrics.getMeter('cuilink.stream'),
    prometheusHandler: prometheus ? (req, res) => prometheus.getMetricsRequestHandler(req, res) : undefined,
    shutdown: () => {
      stopped ??= sdk
        .shutdown()
        .catch((error: unknown) => options.onShutdownError?.(error))
        .finally(() => {
          trace.disable();
          metrics.disable();
        });
      return stopped;
    },
  };
}
