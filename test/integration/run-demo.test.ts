// The main job, exactly as `npm start` runs it: `node bin/cuilink.js demo` starts a local broker, creates the topics, publishes samples/notes.jsonl, links the
// notes with the default model and the default HPO index, prints the results and the throughput,
// stops the broker and exits 0.
//
// The default index is built once per cache directory (a few minutes: ~40k HPO names encoded) and
// reused afterwards. The cache is CUILINK_CACHE_DIR when set (point it at a directory that outlives
// clones to share one build between CI runs on a machine), else .cache/cuilink in the repository —
// where `npm start` itself keeps it — so a second test run reuses the first one's build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENV_VARS } from '../../src/stream/stage-config.ts';
import { readDemoNotes } from '../../src/cli/run-demo.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const SAMPLES = join(REPO, 'samples', 'notes.jsonl');
/** A fresh clone builds the default index inside this (~7.5 min measured at load average 10 on the 2-core machine). */
const TIMEOUT_MS = 15 * 60_000;

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Processes of the demo's group (the broker JVM, say) still running when the demo exited. */
  leftovers: string[];
}

/** Runs the demo in its own process group, so that the group — the broker JVM included — can be killed if the test gives up. */
function runDemo(timeoutMs: number): Promise<Finished> {
  const env: NodeJS.ProcessEnv = { ...process.env, CUILINK_CACHE_DIR: process.env.CUILINK_CACHE_DIR ?? join(REPO, '.cache', 'cuilink') };
  // The stage's own settings from the environment would change what the demo shows.
  for (const [name] of ENV_VARS) delete env[name];
  const child = spawn(process.execPath, ['bin/cuilink.js', 'demo'], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  // If this test process exits first (a failure elsewhere, the runner's own timeout), take the demo down with it.
  const onExit = () => killGroup('SIGKILL');
  process.once('exit', onExit);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      stderr += `\n[test] no exit within ${timeoutMs} ms: SIGTERM to the process group, SIGKILL 15 s later\n`;
      killGroup('SIGTERM');
      setTimeout(() => killGroup('SIGKILL'), 15_000).unref();
    }, timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      process.off('exit', onExit);
      // Nothing of the demo's may outlive it (the JVM is its child): note any leftover, then make sure it is gone.
      const leftovers = liveGroupMembers(child.pid!);
      killGroup('SIGKILL');
      // 'exit' can precede the end of the pipes: give them a moment to flush.
      setTimeout(() => resolve({ code, signal, stdout, stderr, leftovers }), 200);
    });
  });
}

/** `ps` lines of the live (not zombie) processes in a process group. */
function liveGroupMembers(pgid: number): string[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,pgid=,stat=,args='], { encoding: 'utf8' });
  if (ps.status !== 0) throw new Error(`ps failed: ${ps.stderr}`);
  return ps.stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([, group, stat]) => Number(group) === pgid && stat !== undefined && !stat.startsWith('Z'))
    .map((fields) => fields.join(' ').slice(0, 200));
}

function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.setTimeout(2000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(false));
  });
}

test('npm start = cuilink demo: local broker, samples linked with the default model and HPO index, throughput printed, broker stopped, exit 0', { timeout: TIMEOUT_MS + 60_000 }, async () => {
  const { notes } = readDemoNotes(SAMPLES);
  assert.ok(notes.length > 0, 'samples/notes.jsonl has notes');
  const run = await runDemo(TIMEOUT_MS);
  const tail = `\n--- stdout ---\n${run.stdout.slice(-3000)}\n--- stderr ---\n${run.stderr.replace(/^encoding \+ indexing.*\n/gm, '').slice(-3000)}`;
  assert.equal(run.signal, null, `the demo was not killed${tail}`);
  assert.equal(run.code, 0, `the demo exits 0${tail}`);

  // Every sample note is printed with its mention count, then one line per mention: its text → a concept or NIL.
  const lines = run.stdout.split('\n');
  let linkedMentions = 0;
  let totalMentions = 0;
  let reviewed = 0;
  const decisions: string[] = [];
  for (const note of notes) {
    totalMentions += note.mentions.length;
    const at = lines.findIndex((l) => l.startsWith(`${note.noteId}  (`));
    assert.ok(at >= 0, `note ${note.noteId} is printed as linked (not dead-lettered or missing)${tail}`);
    assert.equal(lines[at], `${note.noteId}  (${note.mentions.length} mentions)`, `note ${note.noteId}: every mention came back`);
    for (const [i, mention] of note.mentions.entries()) {
      const line = lines[at + 1 + i] ?? '';
      const match = /^ {2}(.+?) +→ (?:(HP:\d{7}) {2}\S.*|NIL \(best: .*\)) {2}\(confidence (0\.\d\d|1\.00), (?:P\(in KB\) (?:0\.\d\d|1\.00), )?score (-?\d+\.\d{3}), ([a-z-]+(?:, reranked)?|NIL)\)( {2}→ review)?$/.exec(line);
      assert.ok(match, `note ${note.noteId} mention ${mention.id}: '${line}' reads '<text> → <HP concept or NIL> (confidence, score, stage that chose it)'`);
      decisions.push(match[5]!);
      // An exact KB name scores 1; so may an in-note short form whose long form is one (its similarity is the name's own vector's).
      if (!/^(exact|abbreviation)(, reranked)?$/.test(match[5]!)) assert.ok(Number(match[4]) < 1, `only an exact name match scores 1: '${line}'`);
      assert.equal(match[1], mention.text, `note ${note.noteId}: mentions printed in order with their text`);
      if (match[2]) linkedMentions++;
      if (match[6]) reviewed++;
      if (match[5] === 'NIL') assert.ok(match[6] && line.includes('P(in KB) '), `a NIL mention says its P(in KB) and is sent to review: '${line}'`);
    }
  }
  // The samples are phenotypes in clinical wording: the default linker must resolve most of them to an HPO concept, not call them NIL.
  assert.ok(linkedMentions >= totalMentions * 0.75, `${linkedMentions} of ${totalMentions} sample mentions linked to an HPO concept`);
  // They are written to exercise every path (synonyms, lay terms, misspellings, in-note abbreviations), not just exact names.
  const kinds = new Set(decisions.flatMap((d) => d.split(', ')));
  for (const kind of ['exact', 'dense', 'reranked', 'abbreviation']) assert.ok(kinds.has(kind), `some sample link is decided '${kind}' (got ${[...kinds].join(', ')})${tail}`);
  // "measles" (demo-0008): HPO has Post-vaccination measles but no Measles, so the demo shows a NIL.
  assert.ok(kinds.has('NIL'), `some sample mention is NIL (got ${[...kinds].join(', ')})${tail}`);
  assert.ok(decisions.filter((d) => d === 'exact').length < totalMentions / 2, `most sample links are not exact-name matches${tail}`);
  assert.match(run.stdout, /^decided: \d+ \w+/m, 'a tally of how the links were decided');
  assert.ok(reviewed > 0 && reviewed < totalMentions, `some, not all, sample mentions are sent to review (${reviewed} of ${totalMentions})${tail}`);
  assert.match(run.stdout, new RegExp(`^sent to review \\(cuilink\\.review\\): ${reviewed} mentions`, 'm'), 'the review count matches the marked lines');

  const summary = /^(\d+) notes linked, (\d+) dead-lettered; (\d+) mentions in (\d+\.\d+) s = (\d+\.\d) mentions\/s through Kafka/m.exec(run.stdout);
  assert.ok(summary, `a throughput line is printed${tail}`);
  assert.equal(Number(summary[1]), notes.length, 'all sample notes linked');
  assert.equal(Number(summary[2]), 0, 'none dead-lettered');
  assert.equal(Number(summary[3]), totalMentions, 'all sample mentions counted');
  assert.ok(Number(summary[5]) > 0, 'a positive rate');
  assert.match(run.stdout, /^linker \S+, model \S+, index \S+$/m, 'the versions used are printed');

  // Nothing on either stream that is not for a user (#28): no client JSON or warnings, no stack
  // traces, no absurd rate (a progress line timed over a microsecond read 3535456/s), no latency
  // longer than the run itself (a cold start's first inference timed as the samples' p50).
  for (const [name, text] of [['stdout', run.stdout], ['stderr', run.stderr]] as const) {
    const lines = text.split('\n');
    assert.deepEqual(lines.filter((l) => l.trimStart().startsWith('{')), [], `no JSON lines on ${name}${tail}`);
    assert.deepEqual(lines.filter((l) => /^\s+at /.test(l)), [], `no stack trace on ${name}${tail}`);
    assert.deepEqual(lines.filter((l) => /\b(Warning|DeprecationWarning|ExperimentalWarning)\b|\bwarn\b/i.test(l)), [], `no library warnings on ${name}${tail}`);
    for (const match of text.matchAll(/([\d,]+(?:\.\d+)?)(?: [a-z]+)?\/s\b/g)) {
      assert.ok(Number(match[1]!.replace(/,/g, '')) <= 100_000, `a sane rate on ${name}: '${match[0]}'${tail}`);
    }
  }
  for (const line of run.stderr.split('\n').filter((l) => l.length > 0)) {
    // A first run builds the default index: it names the bi-encoder it loads (one line) and reports progress.
    assert.match(line, /^(demo: |encoding \+ indexing names |cuilink: bi-encoder )/, `stderr holds only the demo's own lines and the index build's${tail}`);
  }
  const latency = /latency p50 (\d+) ms, max (\d+) ms/.exec(run.stdout);
  assert.ok(latency, `the latency is printed${tail}`);
  assert.ok(Number(latency[1]) <= Number(latency[2]) && Number(latency[2]) <= Number(summary[4]) * 1000 + 50, `p50 ≤ max ≤ the run's ${summary[4]} s: '${latency[0]}'`);

  // The local broker it started is gone once it exits.
  assert.deepEqual(run.leftovers, [], 'no process of the demo (broker JVM included) outlives it');
  const broker = /demo: broker (\S+):(\d+),/.exec(run.stderr);
  assert.ok(broker, `the broker address is reported on stderr${tail}`);
  assert.equal(await portOpen(broker[1]!, Number(broker[2])), false, `the local broker on ${broker[1]}:${broker[2]} was stopped`);
});
