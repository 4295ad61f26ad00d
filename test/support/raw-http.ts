import { connect } from 'node:net';

/**
 * A raw HTTP/1.1 client for the fuzz of the stage's and the evaluator's HTTP endpoints: it sends
 * bytes no well-behaved client sends (bad request lines, odd framing, half a request) and reads
 * back what the server wrote, response by response, with nothing normalised away.
 */

export interface RawResponse {
  status: number;
  reason: string;
  headers: [string, string][];
  body: Buffer;
}

export interface Exchange {
  /** Every response read, interim (1xx) ones included, in order. */
  responses: RawResponse[];
  /** Bytes after the last whole response: a response cut short or something that is none. */
  rest: Buffer;
  /** The server closed the connection (else the client did, once it had the answers it waited for). */
  closedByServer: boolean;
  /** A socket error (a reset), if any. */
  error?: string;
  /** Everything the server wrote. */
  raw: Buffer;
}

const header = (response: Pick<RawResponse, 'headers'>, name: string) => response.headers.find(([key]) => key.toLowerCase() === name)?.[1];

/**
 * The responses in `bytes`, `bodiless[i]` saying whether the i-th final response answers a HEAD
 * (no body whatever its headers say). Stops at the first incomplete or unreadable response.
 */
export function parseResponses(bytes: Buffer, bodiless: readonly boolean[]): { responses: RawResponse[]; rest: Buffer; untilClose: boolean } {
  const responses: RawResponse[] = [];
  let at = 0;
  let finals = 0;
  while (at < bytes.length) {
    const end = bytes.indexOf('\r\n\r\n', at, 'latin1');
    if (end < 0) break;
    const lines = bytes.subarray(at, end).toString('latin1').split('\r\n');
    const status = /^HTTP\/1\.[01] (\d{3}) ?(.*)$/.exec(lines[0]!);
    if (!status) break;
    const headers = lines.slice(1).map((line): [string, string] => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]);
    const response: RawResponse = { status: Number(status[1]), reason: status[2]!, headers, body: Buffer.alloc(0) };
    let next = end + 4;
    const interim = response.status >= 100 && response.status < 200;
    if (!interim && !bodiless[finals] && response.status !== 204 && response.status !== 304) {
      const length = header(response, 'content-length');
      if (header(response, 'transfer-encoding')?.toLowerCase() === 'chunked') {
        const chunks: Buffer[] = [];
        for (;;) {
          const lineEnd = bytes.indexOf('\r\n', next, 'latin1');
          if (lineEnd < 0) return { responses, rest: bytes.subarray(at), untilClose: false };
          const size = Number.parseInt(bytes.subarray(next, lineEnd).toString('latin1'), 16);
          if (!Number.isFinite(size) || bytes.length < lineEnd + 2 + size + 2) return { responses, rest: bytes.subarray(at), untilClose: false };
          chunks.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
          next = lineEnd + 2 + size + 2;
          if (size === 0) break;
        }
        response.body = Buffer.concat(chunks);
      } else if (length !== undefined) {
        if (bytes.length < next + Number(length)) break;
        response.body = bytes.subarray(next, next + Number(length));
        next += Number(length);
      } else {
        // Neither: the body runs to the close.
        response.body = bytes.subarray(next);
        responses.push(response);
        return { responses, rest: Buffer.alloc(0), untilClose: true };
      }
    }
    responses.push(response);
    if (!interim) finals++;
    at = next;
  }
  return { responses, rest: bytes.subarray(at), untilClose: false };
}

/**
 * Sends `pieces` on a new connection (one write each, `halfClose`: then the client's end of the
 * stream) and reads until the server closes, or until `finals` final responses are whole (then
 * the client closes). A connection still open after `guardMs` is reported as a hang.
 */
export function exchange(url: string, pieces: readonly Buffer[], options: { finals: number; bodiless: readonly boolean[]; halfClose: boolean; guardMs: number }): Promise<Exchange | { hang: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let error: string | undefined;
    let settled = false;
    const finish = (closedByServer: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(guard);
      const raw = Buffer.concat(chunks);
      const { responses, rest } = parseResponses(raw, options.bodiless);
      resolve({ responses, rest, closedByServer, error, raw });
      socket.destroy();
    };
    const guard = setTimeout(() => {
      settled = true;
      socket.destroy();
      resolve({ hang: `no end after ${options.guardMs / 1000} s; read ${JSON.stringify(Buffer.concat(chunks).toString('latin1').slice(0, 200))}` });
    }, options.guardMs);
    socket.on('data', (data) => {
      chunks.push(data);
      const parsed = parseResponses(Buffer.concat(chunks), options.bodiless);
      if (options.finals > 0 && !parsed.untilClose && parsed.rest.length === 0 && parsed.responses.filter((r) => r.status >= 200).length >= options.finals) finish(false);
    });
    socket.on('error', (e) => (error = (e as NodeJS.ErrnoException).code ?? e.message));
    socket.on('close', () => finish(true));
    socket.on('connect', async () => {
      for (const piece of pieces) {
        if (socket.destroyed) return;
        socket.write(piece);
        // A turn of the event loop between pieces, so that the server may read each on its own.
        await new Promise((next) => setImmediate(next));
      }
      if (options.halfClose && !socket.destroyed) socket.end();
    });
  });
}

export { header as responseHeader };
