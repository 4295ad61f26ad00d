import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SidecarReport } from './sidecar-evaluator.ts';

/**
 * The evaluator's HTTP face: `/metrics` (Prometheus text from the OpenTelemetry instruments,
 * EvaluatorMetrics in otel-metrics.ts), `/report` (the full JSON report: both
 * windows, per NER label and semantic type, reliability bins, join counters, alerts) and
 * `/healthz`. Read-only, GET only.
 */
export async function startReportServer(options: { port: number; host?: string; report: () => SidecarReport; metrics: (req: IncomingMessage, res: ServerResponse) => void }): Promise<{ server: Server; url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET' }).end();
      return;
    }
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.address;
  return {
    server,
    url: `http://${host}:${address.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
