import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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

/** `/healthz`, `/readyz` and `/metrics` for orchestrators and scrapers; GET only. */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET' }).end();
      return;
    }
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
