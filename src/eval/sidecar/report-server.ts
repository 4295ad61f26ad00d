import type { IncomingMessage, ServerResponse } from 'node:http';
import { startReadOnlyHttp, type ReadOnlyHttp } from '../../stream/read-only-http.ts';
import type { SidecarReport } from './sidecar-evaluator.ts';

/**
 * The evaluator's HTTP face: `/metrics` (Prometheus text from the OpenTelemetry instruments,
 * EvaluatorMetrics in otel-metrics.ts), `/report` (the full JSON report: both
 * windows, per NER label and semantic type, reliability bins, join counters, alerts) and
 * `/healthz`. Read-only, GET and HEAD only (read-only-http.ts).
 */
export async function startReportServer(options: { port: number; host?: string; report: () => SidecarReport; metrics: (req: IncomingMessage, res: ServerResponse) => void }): Promise<ReadOnlyHttp> {
  return startReadOnlyHttp({ port: options.port, host: options.host ?? '0.0.0.0' }, (path, req, res) => {
    try {
      if (path === '/metrics') {
        options.metrics(req, res);
      } else if (path === '/report') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify(options.report(), null, 2)}\n`);
      } else if (path === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics, /report or /healthz\n');
      }
    } catch (error) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`${(error as Error).message}\n`);
    }
  });
}
