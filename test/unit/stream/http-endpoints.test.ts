// What the stage's health server (src/stream/health-server.ts) and the evaluator's report server
// (src/eval/sidecar/report-server.ts) answer to requests a probe or scraper rarely sends, and how
// they close: faults found by test/unit/cli/http-endpoints-fuzz.test.ts, one test each.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { loadKb } from '../../../src/kb/load.ts';
import { kbOntologyView } from '../../../src/eval/kb-ontology-view.ts';
import { startEvaluatorService } from '../../../src/eval/sidecar/evaluator-service.ts';
import { startReportServer } from '../../../src/eval/sidecar/report-server.ts';
import type { SidecarReport } from '../../../src/eval/sidecar/sidecar-evaluator.ts';
import { startHealthServer } from '../../../src/stream/health-server.ts';
import { exchange, parseResponses, responseHeader, type Exchange } from '../../support/raw-http.ts';
import { memoryEvaluatorSource } from '../eval/memory-evaluator-source.ts';

/** Only tells a hang from a slow machine: close() is immediate when it works. */
const HANG_GUARD_MS = 30_000;

async function send(url: string, request: string, finals = 1, head = false): Promise<Exchange> {
  const got = await exchange(url, [Buffer.from(request, 'latin1')], { finals, bodiless: [head], halfClose: false, guardMs: HANG_GUARD_MS });
  assert.ok(!('hang' in got), JSON.stringify(got));
  return got;
}

async function servers() {
  const health = await startHealthServer({ host: '127.0.0.1', port: 0, live: () => true, ready: () => false, metrics: (_req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end('up 1\n') });
  const report = await startReportServer({ host: '127.0.0.1', port: 0, report: () => ({ windows: {} }) as unknown as SidecarReport, metrics: (_req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end('up 1\n') });
  return { health, report, close: async () => Promise.all([health.close(), report.close()]) };
}

test('HEAD is answered as GET is, without the body; other methods get 405 naming GET and HEAD', async () => {
  // RFC 9110 §9.1: a server that answers GET answers HEAD. Both servers answered HEAD with 405.
  const { health, report, close } = await servers();
  try {
    for (const [url, path, status] of [[health.url, '/healthz', 200], [health.url, '/readyz', 503], [health.url, '/metrics', 200], [report.url, '/report', 200], [report.url, '/nope', 404]] as const) {
      const got = await send(url, `HEAD ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 1, true);
      assert.deepEqual(got.responses.map((r) => r.status), [status], `HEAD ${url}${path}`);
      assert.equal(got.rest.length, 0, 'no body');
    }
    const post = await send(health.url, 'POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    assert.equal(post.responses[0]!.status, 405);
    assert.equal(responseHeader(post.responses[0]!, 'allow'), 'GET, HEAD');
  } finally {
    await close();
  }
});

test('CONNECT is answered 405, not with a dropped connection', async () => {
  // Node drops a CONNECT's connection unanswered unless the server listens for it.
  const { health, report, close } = await servers();
  try {
    for (const url of [health.url, report.url]) {
      const got = await send(url, 'CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n');
      assert.deepEqual(got.responses.map((r) => r.status), [405], url);
      assert.equal(responseHeader(got.responses[0]!, 'allow'), 'GET, HEAD');
    }
  } finally {
    await close();
  }
});

test('an absolute-form target names its path, as RFC 9112 §3.2.2 says a server must accept', async () => {
  // 'GET http://host/healthz' was 404: the whole target was taken for the path.
  const { health, report, close } = await servers();
  try {
    assert.deepEqual((await send(health.url, 'GET http://127.0.0.1:9400/healthz?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9400\r\nConnection: close\r\n\r\n')).responses.map((r) => r.status), [200]);
    assert.deepEqual((await send(report.url, 'GET HTTP://evaluator/report HTTP/1.1\r\nHost: evaluator\r\nConnection: close\r\n\r\n')).responses.map((r) => r.status), [200]);
    // Dot segments are not resolved, in either form: no path here names a file.
    assert.deepEqual((await send(health.url, 'GET http://h/x/../healthz HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n')).responses.map((r) => r.status), [404]);
  } finally {
    await close();
  }
});

/** A connection that has sent `bytes` and waits. */
function idle(url: string, bytes: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(bytes);
      resolve(socket);
    });
    socket.on('error', () => {});
  });
}

test('the evaluator stops while a client holds a connection that sent nothing or half a request', async () => {
  // server.close() waited for such connections to end, and Node's header timeout stops with the
  // listener: `cuilink evaluator` never finished its SIGTERM stop (the metrics were not shut down, no exit).
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-http-'));
  try {
    const view = kbOntologyView(await loadKb(['test/fixtures/eval/mini-kb.jsonl'], { format: 'jsonl' }));
    const options = { joiner: { ttlMs: 60_000, maxPending: 100 }, windows: { lastN: 100, lastMs: 3_600_000 }, alerts: { minSamples: 1 }, stateFile: join(dir, 'state.json'), snapshotIntervalMs: 600_000, port: 0, host: '127.0.0.1', log: () => {} };
    for (const bytes of ['', 'GET /report HTTP/1.1\r\nHost: x\r\n', 'POST /report HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc']) {
      const running = await startEvaluatorService(view, memoryEvaluatorSource(), options);
      const socket = await idle(running.url, bytes);
      const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      let guard: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([running.stop().then(() => 'stopped'), new Promise((resolve) => (guard = setTimeout(() => resolve('hang'), HANG_GUARD_MS)))]);
      clearTimeout(guard);
      socket.destroy();
      assert.equal(outcome, 'stopped', `a connection that sent ${JSON.stringify(bytes)}`);
      await ended;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a /metrics request in flight when the health server closes is answered, then the connection closed', async () => {
  // close() destroyed every connection, the one being answered too: a scrape during the stage's
  // shutdown got a reset instead of its metrics.
  let answer!: ServerResponse;
  let asked!: () => void;
  const inFlight = new Promise<void>((resolve) => (asked = resolve));
  const health = await startHealthServer({ host: '127.0.0.1', port: 0, live: () => true, ready: () => true, metrics: (_req, res) => ((answer = res), asked()) });
  const pending = exchange(health.url, [Buffer.from('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n')], { finals: 1, bodiless: [false], halfClose: false, guardMs: HANG_GUARD_MS });
  await inFlight;
  const closed = health.close();
  answer.writeHead(200, { 'content-type': 'text/plain' }).end('up 1\n');
  await closed;
  const got = await pending;
  assert.ok(!('hang' in got));
  assert.deepEqual(got.responses.map((r) => [r.status, r.body.toString()]), [[200, 'up 1\n']], `${got.error ?? ''} ${got.raw.toString('latin1')}`);
  assert.equal(parseResponses(got.raw, [false]).rest.length, 0);
});
