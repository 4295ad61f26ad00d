import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStageRuntime } from '../../../src/cli/stage-runtime.ts';
import { loadPubTatorCorpus } from '../../../src/eval/gold.ts';
import { kbOntologyView } from '../../../src/eval/kb-ontology-view.ts';
import { startEvaluatorService } from '../../../src/eval/sidecar/evaluator-service.ts';
import { loadKb } from '../../../src/kb/load.ts';
import type { LinkingCore } from '../../../src/link/types.ts';
import { stageConfigSchema } from '../../../src/stream/stage-config.ts';
import { fuzzPlan, int, pick } from '../../support/guarded-fuzz.ts';
import { lcg } from '../../support/lcg.ts';
import { exchange, parseResponses, responseHeader, type Exchange, type RawResponse } from '../../support/raw-http.ts';
import { fakeLinker, SAMPLE_TABLE } from '../eval/fake-linker.ts';
import { memoryEvaluatorSource } from '../eval/memory-evaluator-source.ts';

// The HTTP endpoints of `cuilink run` (/healthz, /readyz, /metrics: src/stream/health-server.ts)
// and `cuilink evaluator` (/healthz, /report, /metrics: src/eval/sidecar/report-server.ts) are
// reachable by anything on the pod network. Each server is started for real on 127.0.0.1 port 0
// (the stage while its linker loads, with its Prometheus exporter; the evaluator fed the fixture
// corpus) and sent, on raw connections, seeded requests: every method the parser knows and some
// it does not, HEAD, CONNECT, origin-, absolute- and asterisk-form targets, `..` and bad
// percent-encoding, query strings, targets up to past the header limit, bodies, chunked framing,
// Expect, Upgrade, HTTP/1.0, a second request pipelined behind; and the same damaged (bare LF,
// NUL and non-ASCII in the target, unknown versions, headers without a colon or folded, conflicting
// lengths, cut short). Then each server is closed with connections open in every state (silent,
// half a request, a body still owed, kept alive, a request just sent). The rule: every whole
// request gets one well-formed answer (the path's status for GET and HEAD, 405 naming GET for
// other methods, a 4xx for a damaged one; never a 500), HEAD with no body, no process crash,
// no connection or close left hanging, and the note text sent in targets, headers and bodies in
// no answer and no log line. It found HEAD refused (405), CONNECT answered by a dropped
// connection, absolute-form targets not found, the evaluator's close (hence its SIGTERM exit)
// hanging for as long as a client held a connection that had sent nothing or half a request,
// and the stage's close resetting a /metrics request in flight (regression tests:
// test/unit/stream/http-endpoints.test.ts). A failure names seed, case and request; rerun it alone
// with CUILINK_FUZZ_SEED=<seed> CUILINK_FUZZ_CASES=<case + 1>.

const PLAN = fuzzPlan([20_261_208, 29, 7_013], 400);
const CLOSE_ROUNDS = Number(process.env.CUILINK_FUZZ_CLOSE_ROUNDS ?? 8);
const GUARD_MS = 30_000;
const SECRET = 'SECRETPATIENT Jane Roe';
const PHI = /SECRETPATIENT|Jane(%20|\+| )Roe/;
/** What a damaged request may be answered with, besides what it would get undamaged. */
const CLIENT_ERRORS = [400, 404, 405, 413, 414, 417, 431, 501, 505];
/** Node's limit on a request's line and headers together. */
const HEAD_LIMIT = 16 * 1024;

interface Served {
  name: string;
  url: string;
  /** The status GET gives each path the server knows; any other is 404. */
  paths: Record<string, number>;
  close(): Promise<void>;
}

/** `cuilink run` while its linker loads: the health server up, the Prometheus exporter behind /metrics. */
async function stageServer(log: string[]): Promise<Served> {
  const config = stageConfigSchema.parse({ brokers: ['127.0.0.1:9'], http: { host: '127.0.0.1', port: 0 }, telemetry: { prometheus: true } });
  let url: string | undefined;
  let loading!: () => void;
  const opened = new Promise<void>((resolve) => (loading = resolve));
  let giveUp!: (error: Error) => void;
  const runtime = startStageRuntime(config, {
    logSink: (line) => {
      log.push(line);
      const entry = JSON.parse(line) as { message: string; url?: string };
      if (entry.message === 'http listening') url = entry.url;
    },
    openCore: () => {
      loading();
      return new Promise<LinkingCore>((_, reject) => (giveUp = reject));
    },
  });
  const ended = runtime.then(
    () => assert.fail('the stage started without a linker'),
    () => {},
  );
  await opened;
  // Abandoning the load closes the HTTP server, then telemetry: the runtime's own path out.
  return { name: 'stage', url: url!, paths: { '/healthz': 503, '/readyz': 503, '/metrics': 200 }, close: async () => (giveUp(new Error('load abandoned')), await ended) };
}

let fixture: Promise<{ view: ReturnType<typeof kbOntologyView>; corpus: Awaited<ReturnType<typeof loadPubTatorCorpus>>; linked: Awaited<ReturnType<ReturnType<typeof fakeLinker>['linkNotes']>> }> | undefined;

/** `cuilink evaluator` fed the fixture corpus and a linker's notes for it. */
async function evaluatorServer(log: string[], dir: string): Promise<Served> {
  fixture ??= (async () => {
    const corpus = await loadPubTatorCorpus('test/fixtures/eval/sample.PubTator');
    const view = kbOntologyView(await loadKb(['test/fixtures/eval/mini-kb.jsonl'], { format: 'jsonl' }));
    return { view, corpus, linked: await fakeLinker(SAMPLE_TABLE).linkNotes(corpus.notes) };
  })();
  const { view, corpus, linked } = await fixture;
  const source = memoryEvaluatorSource();
  const running = await startEvaluatorService(view, source, {
    joiner: { ttlMs: 60_000, maxPending: 100 },
    windows: { lastN: 100, lastMs: 3_600_000 },
    alerts: { minSamples: 1 },
    stateFile: join(dir, `state-${log.length}-${Math.random()}.json`),
    snapshotIntervalMs: 600_000,
    port: 0,
    host: '127.0.0.1',
    log: (line: string) => log.push(line),
  });
  for (const gold of corpus.gold.values()) source.push({ gold });
  for (const note of linked) source.push({ note });
  return { name: 'evaluator', url: running.url, paths: { '/healthz': 200, '/report': 200, '/metrics': 200 }, close: () => running.stop() };
}

interface Request {
  method: string;
  target: string;
  version: string;
  headers: [string, string][];
  body: string;
}

const encode = (text: string) => encodeURIComponent(text);
const METHODS = ['GET', 'GET', 'GET', 'HEAD', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE', 'PROPFIND', 'PURGE', 'CONNECT'];

function target(random: () => number, served: Served): string {
  const known = Object.keys(served.paths);
  const path = pick(random, [...known, ...known, '/', '/nope', '/report', '/readyz', '/METRICS', `${pick(random, known)}/`, `/..${pick(random, known)}`, `/metrics/..${pick(random, known)}`, '/%2e%2e/healthz', '/%zz', '/%', '/%68ealthz', '//healthz', `/${encode(SECRET)}`, '/healthz#frag']);
  const query = pick(random, ['', '', '?', '?a=1&b', `?note=${encode(SECRET)}`, '?%zz&x=%', `?${'q'.repeat(pick(random, [1_000, 8_000, 20_000]))}`]);
  const form = int(random, 12);
  if (form === 0) return `http://127.0.0.1${path}${query}`;
  if (form === 1) return `HTTP://localhost:1${path}${query}`;
  if (form === 2) return '*';
  return `${path}${query}`;
}

function validRequest(random: () => number, served: Served): Request {
  const method = pick(random, METHODS);
  if (method === 'CONNECT') return { method, target: pick(random, ['127.0.0.1:80', 'example.org:443']), version: 'HTTP/1.1', headers: [['Host', 'example.org:443']], body: '' };
  const version = int(random, 8) === 0 ? 'HTTP/1.0' : 'HTTP/1.1';
  const headers: [string, string][] = version === 'HTTP/1.1' || int(random, 2) === 0 ? [['Host', pick(random, ['127.0.0.1', 'localhost:9400', 'x'])]] : [];
  let body = '';
  for (let n = int(random, 4); n > 0; n--) {
    const extra = int(random, 9);
    if (extra === 0) headers.push(['X-Note', SECRET]);
    else if (extra === 1) headers.push(['Cookie', `session=${encode(SECRET)}`]);
    else if (extra === 2 && !headers.some(([name]) => name === 'Expect')) headers.push(['Expect', pick(random, ['100-continue', 'something-else'])]);
    else if (extra === 3) headers.push(['Connection', 'close']);
    else if (extra === 4 && !headers.some(([name]) => name === 'Upgrade')) headers.push(['Connection', 'Upgrade'], ['Upgrade', 'websocket']);
    else if (extra === 5) headers.push(['Accept-Encoding', 'gzip, br']);
    else if (extra === 6) headers.push(['X-Long', 'v'.repeat(pick(random, [100, 4_000, 20_000]))]);
    else if (extra === 7 && body === '') body = SECRET;
    else headers.push(['Accept', 'text/plain;version=0.0.4']);
  }
  if (body !== '') headers.push(int(random, 2) === 0 ? ['Content-Length', String(Buffer.byteLength(body))] : ['Transfer-Encoding', 'chunked']);
  return { method, target: target(random, served), version, headers, body };
}

function bytesOf(r: Request, lineEnd = '\r\n'): Buffer {
  const chunked = r.headers.some(([name, value]) => name === 'Transfer-Encoding' && value === 'chunked');
  const body = chunked ? `${Buffer.byteLength(r.body).toString(16)}\r\n${r.body}\r\n0\r\n\r\n` : r.body;
  return Buffer.from(`${r.method} ${r.target} ${r.version}${lineEnd}${r.headers.map(([n, v]) => `${n}: ${v}${lineEnd}`).join('')}${lineEnd}${chunked && r.body === '' ? '' : body}`, 'latin1');
}

/** The path a target names: origin-form up to its query; absolute-form's the same, its scheme and host dropped (dot segments kept). */
function pathOf(target: string): string {
  const origin = target.replace(/^https?:\/\/[^/?]*/i, '');
  return origin === target || origin.startsWith('/') ? origin.split('?')[0]! : `/${origin.split('?')[0]}`;
}

/** The status a well-formed request must get. */
function expectedStatus(r: Request, served: Served): number {
  if (bytesOf(r).indexOf('\r\n\r\n') > HEAD_LIMIT) return 431;
  // Node reads Expect in HTTP/1.1 only.
  const expect = r.headers.find(([name]) => name === 'Expect')?.[1];
  if (r.version === 'HTTP/1.1' && expect !== undefined && expect.toLowerCase() !== '100-continue') return 417;
  if (r.method !== 'GET' && r.method !== 'HEAD') return 405;
  return served.paths[pathOf(r.target)] ?? 404;
}

/** A request as no client should send it: what was done, its bytes, and whether it is whole. */
function damaged(random: () => number, r: Request): { what: string; bytes: Buffer; whole: boolean; instead?: Request } {
  const text = bytesOf(r).toString('latin1');
  const line = `${r.method} ${r.target} ${r.version}`;
  const swap = (next: string) => Buffer.from(text.replace(line, next), 'latin1');
  switch (int(random, 14)) {
    case 0:
      return { what: 'bare LF line ends', bytes: bytesOf(r, '\n'), whole: true };
    case 1:
      return { what: 'a space in the target', bytes: swap(`${r.method} /a b${r.target} ${r.version}`), whole: true };
    case 2:
      return { what: 'NUL in the target', bytes: swap(`${r.method} /he\u0000lthz ${r.version}`), whole: true };
    case 3:
      return { what: 'a non-ASCII byte in the target', bytes: swap(`${r.method} /h\u00e9 ${r.version}`), whole: true };
    case 4: {
      const method = pick(random, ['BREW', 'get', 'G/ET', 'GET\u0000', '']);
      return { what: `method ${JSON.stringify(method)}`, bytes: swap(`${method} ${r.target} ${r.version}`), whole: true };
    }
    case 5: {
      const version = pick(random, ['HTTP/2.0', 'HTTP/1.x', 'HTTP/9.9', 'HTTX/1.1', '']);
      return { what: `version ${JSON.stringify(version)}`, bytes: swap(`${r.method} ${r.target} ${version}`.trimEnd()), whole: true };
    }
    case 6:
      return { what: 'a header without a colon', bytes: Buffer.from(text.replace('\r\n', '\r\nNo Colon Here\r\n'), 'latin1'), whole: true };
    case 7:
      return { what: 'a folded header', bytes: Buffer.from(text.replace('\r\n', `\r\nX-A: 1\r\n ${SECRET}\r\n`), 'latin1'), whole: true };
    case 8: {
      const framing = pick(random, ['Content-Length: 5\r\nTransfer-Encoding: chunked', 'Content-Length: -1', 'Content-Length: abc', 'Content-Length: 3\r\nContent-Length: 4', 'Transfer-Encoding: gzip']);
      return { what: `framing ${JSON.stringify(framing)}`, bytes: Buffer.from(text.replace('\r\n', `\r\n${framing}\r\n`), 'latin1'), whole: true };
    }
    case 9: {
      const instead: Request = { method: 'GET', target: '/healthz', version: 'HTTP/1.1', headers: [['X-Note', SECRET]], body: '' };
      return { what: 'instead: no Host in HTTP/1.1', bytes: bytesOf(instead), whole: true, instead };
    }
    case 10: {
      const instead: Request = { method: 'POST', target: '/healthz', version: 'HTTP/1.1', headers: [['Host', 'x'], ['Transfer-Encoding', 'chunked']], body: '' };
      return { what: 'instead: a chunked body that is no chunk', bytes: Buffer.concat([bytesOf(instead), Buffer.from(`zz\r\n${SECRET}\r\n0\r\n\r\n`, 'latin1')]), whole: true, instead };
    }
    case 11: {
      const instead: Request = { method: pick(random, ['GET', 'POST']), target: '/healthz', version: 'HTTP/1.1', headers: [['Host', 'x'], ['Content-Length', '100']], body: '' };
      return { what: `instead: ${instead.method} with a body shorter than its Content-Length`, bytes: Buffer.concat([bytesOf(instead), Buffer.from(SECRET)]), whole: false, instead };
    }
    case 12:
      return { what: 'instead: an HTTP/2 preface', bytes: Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), whole: true, instead: { method: 'PRI', target: '*', version: 'HTTP/2.0', headers: [], body: '' } };
    default: {
      const bytes = bytesOf(r);
      const at = int(random, bytes.length);
      return { what: `cut at byte ${at} of ${bytes.length}`, bytes: bytes.subarray(0, at), whole: false };
    }
  }
}

const describe = (r: Request) => `${r.method} ${r.target.length > 60 ? `${r.target.slice(0, 60)}… (${r.target.length} chars)` : r.target} ${r.version}${r.headers.length > 0 ? ` [${r.headers.map(([n, v]) => `${n}${v.length > 20 ? `(${v.length})` : `=${v}`}`).join(', ')}]` : ''}${r.body ? ' +body' : ''}`;

/** Why what came back breaks the rule, or undefined. */
function answerProblem(got: Exchange, expected: { status: number[]; head: boolean }[], whole: boolean, damaged: boolean, overLimit: boolean): string | undefined {
  // Past the header limit Node answers 431 and closes while the client still sends: its TCP reset may reach the client before the answer does.
  if (overLimit && got.responses.length === 0 && got.error === 'ECONNRESET') return undefined;
  if (PHI.test(got.raw.toString('latin1'))) return 'the note text sent is in the answer';
  if (got.rest.length > 0) return `bytes that are no whole response: ${JSON.stringify(got.rest.toString('latin1').slice(0, 120))}`;
  const finals = got.responses.filter((r) => r.status >= 200);
  if (got.responses.some((r) => r.status >= 100 && r.status < 200 && r.status !== 100)) return `an interim ${got.responses.find((r) => r.status < 200)!.status}`;
  for (const [i, response] of finals.entries()) {
    // A damaged request's head may be answered, then its body refused (400: cut short, or no chunk) by Node's parser.
    const want = expected[i] ?? (damaged && i === expected.length && response.status === 400 ? { status: [400], head: false } : undefined);
    if (want === undefined) return `${finals.length} answers to ${expected.length} requests`;
    if (!want.status.includes(response.status)) return `answer ${i + 1}: ${response.status} ${response.reason}, expected ${want.status.join(' or ')}`;
    if (response.status === 405 && !/\bGET\b/.test(responseHeader(response, 'allow') ?? '')) return `405 without Allow: GET (${responseHeader(response, 'allow')})`;
    if (response.status === 200 && !want.head && response.body.length === 0) return `answer ${i + 1}: 200 with no body`;
  }
  // A whole request is answered; the first of a pipeline at least, even when the second is damaged.
  if (whole && finals.length < expected.length) return `${finals.length} answers to ${expected.length} requests${got.error ? ` (${got.error})` : ''}`;
  return undefined;
}

/** One case: a request (maybe damaged, maybe with a second behind it) on a new connection. */
async function runCase(random: () => number, served: Served): Promise<{ what: string; problem?: string }> {
  const first = validRequest(random, served);
  // Node reads what follows a request that asks for an Upgrade as the new protocol's, whether or not it upgrades: nothing is pipelined behind one.
  const closes = first.version === 'HTTP/1.0' || first.headers.some(([n, v]) => n === 'Connection' && (v === 'close' || v === 'Upgrade')) || first.method === 'CONNECT';
  const isDamaged = int(random, 3) === 0;
  const expected = [{ status: [expectedStatus(first, served)], head: first.method === 'HEAD' }];
  let bytes: Buffer;
  let whole = true;
  let what = describe(first);
  if (isDamaged) {
    const damage = damaged(random, first);
    bytes = damage.bytes;
    whole = damage.whole;
    what = damage.instead ? `${describe(damage.instead)}, ${damage.what}` : `${what}, damaged: ${damage.what}`;
    if (damage.instead) expected[0] = { status: [expectedStatus(damage.instead, served)], head: damage.instead.method === 'HEAD' };
    expected[0]!.status.push(...CLIENT_ERRORS);
  } else {
    bytes = bytesOf(first);
  }
  const pieces = [bytes];
  // A second request behind a whole first one that keeps the connection.
  if (!isDamaged && !closes && expected[0]!.status[0] !== 431 && expected[0]!.status[0] !== 417 && int(random, 3) === 0) {
    const second: Request = { method: pick(random, ['GET', 'HEAD']), target: pick(random, Object.keys(served.paths)), version: 'HTTP/1.1', headers: [['Host', 'x'], ['Connection', 'close']], body: '' };
    pieces.push(bytesOf(second));
    expected.push({ status: [expectedStatus(second, served)], head: second.method === 'HEAD' });
    what += `, then ${describe(second)}`;
  }
  // Sent in up to three pieces, as a slow client would.
  const all = Buffer.concat(pieces);
  const cuts = [int(random, all.length + 1), int(random, all.length + 1)].sort((a, b) => a - b);
  const split = int(random, 2) === 0 ? [all] : [all.subarray(0, cuts[0]), all.subarray(cuts[0], cuts[1]), all.subarray(cuts[1])];
  const got = await exchange(served.url, split, { finals: whole ? expected.length : 0, bodiless: expected.map((e) => e.head), halfClose: !whole, guardMs: GUARD_MS });
  if ('hang' in got) return { what, problem: got.hang };
  const head = all.indexOf('\r\n\r\n');
  return { what, problem: answerProblem(got, expected, whole, isDamaged, (head < 0 ? all.length : head) > HEAD_LIMIT) };
}

type Held = { what: string; socket: ReturnType<typeof connect>; chunks: Buffer[]; ended: Promise<string | undefined>; answered?: Promise<void> };

/** A connection left open in `state` while the server closes. */
function hold(url: string, state: string): Held {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const chunks: Buffer[] = [];
  let error: string | undefined;
  socket.on('data', (d) => chunks.push(d));
  socket.on('error', (e) => (error = (e as NodeJS.ErrnoException).code ?? e.message));
  const ended = new Promise<string | undefined>((resolve) => socket.on('close', () => resolve(error)));
  const held: Held = { what: state, socket, chunks, ended };
  const request = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Note: ${SECRET}\r\n\r\n`;
  if (state === 'half a request') socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n');
  else if (state === 'a body still owed') socket.write(`POST /report HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n${SECRET}`);
  else if (state === 'a request just sent') socket.write(request('/metrics'));
  else if (state === 'kept alive after an answer') {
    socket.write(request('/healthz'));
    held.answered = new Promise<void>((resolve) => {
      const check = () => (parseResponses(Buffer.concat(chunks), [false]).responses.length > 0 ? resolve() : undefined);
      socket.on('data', check);
      socket.on('close', () => resolve());
    });
  }
  return held;
}

const STATES = ['silent', 'half a request', 'a body still owed', 'a request just sent', 'kept alive after an answer'];

/** One round: a server closed with connections open in seeded states. */
async function closeRound(random: () => number, start: () => Promise<Served>): Promise<{ what: string; problem?: string }> {
  const served = await start();
  const held: Held[] = [];
  for (let n = 1 + int(random, 4); n > 0; n--) held.push(hold(served.url, pick(random, STATES)));
  const what = `${served.name} closed with connections ${held.map((h) => h.what).join(', ')}`;
  await Promise.all(held.map((h) => new Promise<void>((resolve) => (h.socket.connecting ? h.socket.once('connect', () => resolve()) : resolve()))));
  await Promise.all(held.map((h) => h.answered));
  const guard = new Promise<'hang'>((resolve) => setTimeout(() => resolve('hang'), GUARD_MS).unref());
  const outcome = await Promise.race([served.close().then(() => 'closed' as const), guard]);
  const ends = await Promise.race([Promise.all(held.map((h) => h.ended)).then(() => 'ended' as const), guard]);
  for (const h of held) h.socket.destroy();
  if (outcome === 'hang') return { what, problem: `close() had not finished after ${GUARD_MS / 1000} s` };
  if (ends === 'hang') return { what, problem: `connections still open ${GUARD_MS / 1000} s after close(): ${held.filter((h) => !h.socket.closed).map((h) => h.what).join(', ')}` };
  for (const h of held) {
    const raw = Buffer.concat(h.chunks);
    if (PHI.test(raw.toString('latin1'))) return { what, problem: `${h.what}: the note text sent is in the answer` };
    const { responses, rest } = parseResponses(raw, [false, false]);
    if (rest.length > 0) return { what, problem: `${h.what}: bytes that are no whole response: ${JSON.stringify(rest.toString('latin1').slice(0, 120))}` };
    if (responses.some((r: RawResponse) => r.status >= 500 && r.status !== 503)) return { what, problem: `${h.what}: answered ${responses.map((r) => r.status).join(', ')}` };
    if (h.what === 'kept alive after an answer' && responses.length === 0) return { what, problem: `${h.what}: no answer` };
  }
  return { what };
}

test('every request to the stage\'s and the evaluator\'s HTTP endpoints gets one well-formed answer, none a 500; closing never hangs; no note text in answers or logs', { timeout: 600_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-http-fuzz-'));
  const failures: string[] = [];
  const log: string[] = [];
  let current = 'starting';
  // A throw out of a request handler is uncaught: it would end `cuilink run` or the evaluator.
  const crashed = (error: unknown) => failures.push(`${current}: uncaught ${(error as Error).stack ?? String(error)}`);
  process.on('uncaughtException', crashed);
  let cases = 0;
  try {
    for (const seed of PLAN.seeds) {
      const random = lcg(seed);
      for (const start of [() => stageServer(log), () => evaluatorServer(log, dir)]) {
        const served = await start();
        try {
          for (let index = 0; index < PLAN.cases && failures.length < 20; index++) {
            current = `seed ${seed} case ${index} (${served.name})`;
            const { what, problem } = await runCase(random, served);
            current = `seed ${seed} case ${index} (${served.name}: ${what})`;
            if (process.env.CUILINK_FUZZ_LOG) process.stderr.write(`${current}: ${problem ?? 'ok'}\n`);
            if (problem !== undefined) failures.push(`${current}: ${problem}`);
            cases++;
          }
        } finally {
          await served.close();
        }
      }
      for (let round = 0; round < CLOSE_ROUNDS && failures.length < 20; round++) {
        const start = round % 2 === 0 ? () => stageServer(log) : () => evaluatorServer(log, dir);
        current = `seed ${seed} close round ${round}`;
        const { what, problem } = await closeRound(random, start);
        current = `seed ${seed} close round ${round} (${what})`;
        if (process.env.CUILINK_FUZZ_LOG) process.stderr.write(`${current}: ${problem ?? 'ok'}\n`);
        if (problem !== undefined) failures.push(`${current}: ${problem}`);
      }
    }
  } finally {
    process.off('uncaughtException', crashed);
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(failures, []);
  assert.equal(cases, PLAN.seeds.length * PLAN.cases * 2);
  const leaked = log.filter((line) => PHI.test(line));
  assert.deepEqual(leaked, [], 'no log line holds the note text sent');
  assert.ok(log.some((line) => /http listening/.test(line)), 'the logs were captured');
});
