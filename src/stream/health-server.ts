import type { IncomingMessage, ServerResponse } from 'node:http';
import { startReadOnlyHttp } from './read-only-http.ts';

export interface HealthServerOptions {
  host: string;
  port: number;
  /** Live: the process has started (index and models loaded) and is not wedged (false once a fatal error was seen). */
  live: () => boolean;
  /** Ready: the linker and index are loaded and the consumer has joined its group. */
  ready: () => boolean;
  /** Prometheus text exposition; 404 when absent. */
  metrics?: (req: IncomingMessage, res: ServerResponse) => void;
}

export interface HealthServer {
  url: string;
  close(): Promise<void>;
}

/** `/healthz`, `/readyz` and `/metrics` for orchestrators and scrapers; GET and HEAD only (read-only-http.ts). */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  return startReadOnlyHttp(options, (path, req, res) => {
    if (path === '/healthz') {
      const live = options.live();
      res.writeHead(live ? 200 : 503, { 'content-type': 'text/plain' }).end(live ? 'ok\n' : 'failed\n');
    } else if (path === '/readyz') {
      const ready = options.ready();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' }).end(ready ? 'ready\n' : 'not ready\n');
    } else if (path === '/metrics' && options.metrics) {
      options.metrics(req, res);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /healthz, /readyz or /metrics\n');
    }
  });
}
