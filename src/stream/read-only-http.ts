import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** A server that answers GET answers HEAD (RFC 9110 §9.1); Node leaves HEAD's body out. */
export const READ_METHODS = 'GET, HEAD';

/**
 * How long close() lets answers under way finish before it ends their connections too: a client
 * that does not read a large /report must not hold a SIGTERM stop for good.
 */
const CLOSE_GRACE_MS = 5_000;

/**
 * The path a request target names: origin-form up to its query, absolute-form ("http://host/p?q",
 * which RFC 9112 §3.2.2 says a server must accept) the same once its scheme and host are dropped.
 * Dot segments and percent-escapes stay as sent: no path here names a file, and one the server
 * does not know as written is not found.
 */
export function requestPath(target = '/'): string {
  const origin = target.replace(/^https?:\/\/[^/?]*/i, '');
  const path = origin.split('?')[0]!;
  return origin !== target && !path.startsWith('/') ? `/${path}` : path;
}

export interface ReadOnlyHttp {
  url: string;
  /** Stops listening, ends idle and half-sent connections, lets answers under way finish (for a while), then resolves. */
  close(): Promise<void>;
}

/**
 * The HTTP face of a service whose paths are read only (probes, metrics, reports): `answer` gets
 * GET and HEAD requests by path; any other method is 405, CONNECT included (Node drops a CONNECT's
 * connection unanswered when nothing listens for it). close() does not wait on clients: Node's
 * server.close() waits for every connection to end, and one that sent nothing or half a request
 * stays open for as long as its client likes once the listener (and with it the header timeout) is gone.
 */
export async function startReadOnlyHttp(options: { host: string; port: number }, answer: (path: string, req: IncomingMessage, res: ServerResponse) => void): Promise<ReadOnlyHttp> {
  const answering = new Map<ServerResponse, Socket>();
  const sockets = new Set<Socket>();
  let closing = false;
  const server: Server = createServer((req, res) => {
    answering.set(res, req.socket);
    if (closing) res.setHeader('connection', 'close');
    res.once('close', () => {
      answering.delete(res);
      // An answer sent as kept alive before the close began: its connection is ended after it.
      if (closing && ![...answering.values()].includes(req.socket)) req.socket.end();
    });
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: READ_METHODS }).end();
      return;
    }
    answer(requestPath(req.url), req, res);
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('connect', (_req: IncomingMessage, socket: Socket) => {
    socket.end(`HTTP/1.1 405 Method Not Allowed\r\nAllow: ${READ_METHODS}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.address;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        closing = true;
        const grace = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
        server.close(() => {
          clearTimeout(grace);
          resolve();
        });
        const busy = new Set(answering.values());
        for (const res of answering.keys()) if (!res.headersSent) res.setHeader('connection', 'close');
        for (const socket of sockets) if (!busy.has(socket)) socket.destroy();
      });
      return closed;
    },
  };
}
