import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { ensureTopics } from '../../src/stream/topics.ts';
import { loadStageConfig } from '../../src/stream/stage-config.ts';
import { avroToLinkedNote, createRecordCodec } from '../../src/stream/avro/index.ts';
import { readIndexManifest } from '../../src/retrieve/index-manifest.ts';
import { PHENOTYPE_KB, readTopics, waitFor } from '../support/stream-fixtures.ts';
import { deployLint, installOrSkip, run } from '../support/deploy-tools.ts';
import { loadPubTatorCorpus } from '../../src/eval/gold.ts';
import { goldStream } from '../../src/stream/label-selection/note-draw.ts';

// The container, minus the container: the stage is started with the image's ENTRYPOINT + the
// compose/k8s command, the image's ENV (paths mapped to temporary directories), from a working
// directory holding exactly what the image's final stage copies, against a real broker, over an
// index root built and activated by the same CLI commands the index-build Job runs. The sample
// notes go in through the compose stack's publisher command (cuilink gold-sample).

const DOCKERFILE = 'deploy/docker/Dockerfile';
const STAGE_CONFIG = 'deploy/compose/stage.json';
const SAMPLE = 'deploy/compose/sample/notes.PubTator';
const REPO = resolve('.');
const codec = createRecordCodec();
let broker: LocalBroker;
let kafka: KafkaClient;
let scratch: string;
let app: string;
let indexRoot: string;

interface Image {
  entrypoint: string[];
  env: Record<string, string>;
  copied: string[];
  /** The final stage copies dist/ from the build stage. */
  compiled: boolean;
}

/** ENTRYPOINT, ENV and the paths COPY'd from the build context, read from the Dockerfile's final stage. */
function readImage(): Image {
  const text = readFileSync(DOCKERFILE, 'utf8').replace(/\\\n/g, ' ');
  const final = text.slice(text.lastIndexOf('\nFROM '));
  // tini runs as PID 1 in the container (deploy-init.test.ts); here the test runner is the parent,
  // so the command line after `tini --` is started directly.
  const withInit = JSON.parse(final.match(/^ENTRYPOINT (\[.*\])$/m)![1]!) as string[];
  assert.deepEqual(withInit.slice(0, 2), ['tini', '--'], 'the image runs its command line under tini');
  const entrypoint = withInit.slice(2);
  const env: Record<string, string> = {};
  for (const [, pairs] of final.matchAll(/^ENV (.+)$/gm)) for (const [, k, v] of pairs!.matchAll(/(\w+)=(\S+)/g)) env[k!] = v!;
  const copied = [...final.matchAll(/^COPY (?!--from)(?:--\S+ )*(\S+) \S+$/gm)].map((m) => m[1]!).filter((p) => !p.startsWith('$'));
  copied.push('node_modules'); // COPY --from=deps: the production node_modules
  // COPY --from=build /app/dist ./dist: the compiled JavaScript (`npm run build` in the build stage).
  const compiled = /^COPY --from=build (?:--\S+ )*\/app\/dist \.\/dist$/m.test(final);
  return { entrypoint, env, copied, compiled };
}

/** The image's /app: each copied path linked in from the checkout, nothing else. */
function buildAppDir(copied: string[]): string {
  const dir = join(scratch, 'app');
  for (const path of copied) {
    const parent = join(dir, path, '..');
    mkdirSync(parent, { recursive: true });
    symlinkSync(join(REPO, path), join(dir, path));
  }
  return dir;
}

/** Paths under `dir`, not following symlinks: the app directory's own entries. */
function listTree(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(prefix, entry.name);
    return entry.isDirectory() ? [path, ...listTree(join(dir, entry.name), path)] : [path];
  }).sort();
}

async function freePort(): Promise<number> {
  return new Promise((done) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => done(port));
    });
  });
}

interface Stage {
  child: ChildProcess;
  output: () => string;
  url: string;
  exited: Promise<number | null>;
}

/** Every stage and evaluator process still running, killed by `after` whatever failed. */
const running = new Set<ChildProcess>();

async function startStage(image: Image, command: string[], options: { portFlag?: string } = {}): Promise<Stage> {
  const port = await freePort();
  const mapped: Record<string, string> = {
    ...(options.portFlag ? { [options.portFlag]: String(port) } : {}),
    '/var/cache/cuilink/evaluator-state.json': join(scratch, 'cache', 'evaluator-state.json'),
    '/tmp': join(scratch, 'tmp'),
    '/var/cache/cuilink': join(scratch, 'cache'),
    '/opt/cuilink/indexes/default': indexRoot,
    '/etc/cuilink/stage.json': join(REPO, STAGE_CONFIG),
  };
  const map = (value: string) => mapped[value] ?? value;
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, TMPDIR: mapped['/tmp'] };
  for (const [k, v] of Object.entries(image.env)) env[k] = map(v);
  Object.assign(env, { CUILINK_BROKERS: broker.brokers.join(','), CUILINK_HTTP_PORT: String(port) });
  const [program, ...args] = [...image.entrypoint, ...command.map(map)];
  const child = spawn(program === 'node' ? process.execPath : program!, args, { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  running.add(child);
  void exited.then(() => running.delete(child));
  return { child, output: () => output, url: `http://127.0.0.1:${port}`, exited };
}

async function status(url: string): Promise<number> {
  try {
    return (await fetch(url)).status;
  } catch {
    return 0;
  }
}

/** SIGTERM, as the kubelet sends it; the stage must drain and exit 0 within its drain timeout. */
async function stopStage(stage: Stage, drainTimeoutMs: number): Promise<void> {
  stage.child.kill('SIGTERM');
  const code = await Promise.race([stage.exited, new Promise<'late'>((done) => setTimeout(() => done('late'), drainTimeoutMs + 15_000))]);
  assert.equal(code, 0, `the stage exits 0 after SIGTERM within the drain timeout\n${stage.output().slice(-2000)}`);
}

async function cli(args: string[]): Promise<string> {
  const result = await run(process.execPath, ['bin/cuilink.js', ...args], { env: { ...process.env, CUILINK_BROKERS: broker.brokers.join(',') } });
  assert.equal(result.code, 0, `cuilink ${args.join(' ')}: ${result.stderr}`);
  return result.stdout + result.stderr;
}

/**
 * LinkedNotes on the output topic linked by `indexVersion`, latest per note, once `notes` distinct
 * notes have one (re-reading with a higher record count when earlier records, e.g. redeliveries,
 * filled the first read).
 */
async function linkedBy(indexVersion: string, notes: number, minRecords = notes): Promise<{ byNote: Map<string, ReturnType<typeof avroToLinkedNote>>; records: number }> {
  const deadline = Date.now() + 180_000;
  let want = minRecords;
  for (;;) {
    const read = await readTopics(kafka, ['cuilink.linked'], (r) => r.get('cuilink.linked')!.length >= want, { timeoutMs: Math.max(1000, deadline - Date.now()) });
    const records = read.get('cuilink.linked')!;
    const byNote = new Map<string, ReturnType<typeof avroToLinkedNote>>();
    for (const r of records) {
      const linked = avroToLinkedNote(await codec.decode('LinkedNote', r.value!, r.headers as never));
      if (linked.indexVersion === indexVersion) byNote.set(linked.noteId, linked);
    }
    if (byNote.size >= notes || Date.now() > deadline) return { byNote, records: records.length };
    want = records.length + 1;
  }
}

/** A service's command from deploy/compose/compose.yaml as compose-go resolves it; undefined when deploy-lint cannot be built here. */
async function composeCommand(service: string): Promise<string[] | undefined> {
  const { tool, skip } = await installOrSkip(deployLint);
  if (skip) {
    console.error(`deploy-entrypoint: evaluator part skipped: ${skip}`);
    return undefined;
  }
  const result = await run(tool!, ['compose', 'deploy/compose/compose.yaml']);
  assert.equal(result.code, 0, result.stderr);
  return (JSON.parse(result.stdout) as { services: Record<string, { command: string[] }> }).services[service]!.command;
}

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'cuilink-entrypoint-'));
  mkdirSync(join(scratch, 'tmp'));
  mkdirSync(join(scratch, 'cache'));
  indexRoot = join(scratch, 'indexes');
  broker = await startLocalBroker();
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'deploy-entrypoint-test', logLevel: 'nothing' });
  const config = loadStageConfig({ file: STAGE_CONFIG, env: {} });
  // What compose's kafka-topics service does. A client can see a just-created topic's metadata
  // before its leader (UNKNOWN_TOPIC_OR_PARTITION); ensureTopics only creates what is missing, so
  // a second try is safe.
  for (let attempt = 1; ; attempt++) {
    try {
      await ensureTopics(kafka, [config.topics.input, config.topics.output, 'cuilink.gold'], { partitions: 2 });
      await ensureTopics(kafka, [config.topics.deadLetter], { partitions: 1 });
      break;
    } catch (error) {
      if (attempt === 3) throw error;
      await new Promise((done) => setTimeout(done, 1000));
    }
  }
  const image = readImage();
  app = buildAppDir(image.copied);
  // The image runs compiled JavaScript, not TypeScript: build dist/ into the app directory as the
  // build stage does (the same tsconfig.build.json), so the stage below runs what the image runs.
  assert.ok(image.compiled, 'the Dockerfile copies dist/ from its build stage');
  assert.ok(!image.copied.includes('src'), 'the image ships no TypeScript sources');
  const tsc = await run(process.execPath, [join(REPO, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(REPO, 'tsconfig.build.json'), '--outDir', join(app, 'dist')]);
  assert.equal(tsc.code, 0, `npm run build: ${tsc.stdout}${tsc.stderr}`);
});

after(async () => {
  // A failed assertion leaves its stage or evaluator running: the test file would never end.
  for (const child of running) child.kill('SIGKILL');
  await broker?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

test('the image\'s command line serves the stage from an index root, links the sample notes, and rolls to a new index version on restart', async () => {
  const image = readImage();
  assert.deepEqual(image.entrypoint, ['node', 'bin/cuilink.js']);
  const command = ['run', '--config', '/etc/cuilink/stage.json']; // deploy/compose/compose.yaml and the k8s Deployment
  const drainTimeoutMs = loadStageConfig({ file: STAGE_CONFIG, env: {} }).drainTimeoutMs;

  // Index version 1 lacks the concept 'Seizure'; version 2 is the full KB. Built and activated as the index-build Job does.
  const withoutSeizure = join(scratch, 'kb-v1.jsonl');
  writeFileSync(withoutSeizure, readFileSync(PHENOTYPE_KB, 'utf8').split('\n').filter((l) => !l.includes('"HP:0001250"')).join('\n'));
  await cli(['index', 'build', '--kb', withoutSeizure, '--out', join(indexRoot, 'kb-v1'), '--no-progress']);
  await cli(['index', 'activate', '--root', indexRoot, '--version', 'kb-v1']);
  const v1 = readIndexManifest(join(indexRoot, 'kb-v1')).indexVersion;
  const appTree = listTree(app);

  const first = await startStage(image, command);
  await waitFor(async () => (await status(`${first.url}/healthz`)) === 200, 120_000, '/healthz');
  await waitFor(async () => (await status(`${first.url}/readyz`)) === 200, 180_000, `/readyz\n${first.output().slice(-2000)}`);
  // The sidecar evaluator with compose's command line, next to the stage.
  const evaluatorCommand = await composeCommand('evaluator');
  const evaluator = evaluatorCommand ? await startStage(image, evaluatorCommand, { portFlag: evaluatorCommand[evaluatorCommand.indexOf('--port') + 1] }) : undefined;
  if (evaluator) await waitFor(async () => (await status(`${evaluator.url}/healthz`)) === 200, 120_000, `evaluator /healthz\n${evaluator.output().slice(-2000)}`);
  await cli(['gold-sample', '--corpus', SAMPLE, '--fraction', '1', '--notes-topic', 'cuilink.notes', '--gold-topic', 'cuilink.gold']);
  const { byNote: firstRound, records: firstRecords } = await linkedBy(v1, 8);
  assert.equal(firstRound.size, 8, 'every sample note came out linked by index version 1');
  const seizures = (linked: ReturnType<typeof avroToLinkedNote>) => linked.mentions.find((m) => m.mentionId === '69-77')!;
  assert.notEqual(seizures(firstRound.get('900001')!).conceptId, 'HP:0001250', 'v1 has no Seizure concept');
  const metrics = await (await fetch(`${first.url}/metrics`)).text();
  assert.match(metrics, /cuilink_stream_consumed_total\{[^}]*\} (\d+)/);
  assert.ok(Number(metrics.match(/cuilink_stream_consumed_total\{[^}]*\} (\d+)/)![1]) >= 8);
  await stopStage(first, drainTimeoutMs);
  if (evaluator) {
    // Compose's evaluator scores the measure stream: every gold mention of the notes the memory
    // updater does not learn (the same --learn-fraction) joins its prediction, the rest are counted
    // as learn-stream gold; acc@1 is served for the dashboard.
    const learnFraction = Number(evaluatorCommand![evaluatorCommand!.indexOf('--learn-fraction') + 1]);
    const gold = [...(await loadPubTatorCorpus(SAMPLE)).gold.values()];
    const measured = gold.filter((g) => goldStream(g.noteId, learnFraction) === 'measure').length;
    assert.ok(measured > 0 && measured < gold.length, 'the sample has notes in both streams');
    const report = async () => (await (await fetch(`${evaluator.url}/report`)).json()) as { samplesScored: number; goldByStream: { learn: number; measure: number } };
    await waitFor(async () => (await report()).samplesScored >= measured, 60_000, `the evaluator to score the ${measured} measure-stream gold mentions`);
    assert.deepEqual((await report()).goldByStream, { learn: gold.length - measured, measure: measured });
    const evalMetrics = await (await fetch(`${evaluator.url}/metrics`)).text();
    assert.match(evalMetrics, /^cuilink_eval_acc1\{window="count",by="overall",group="all"\} [0-9.]+$/m);
    await stopStage(evaluator, 10_000);
  }

  // Rollout: build version 2 next to version 1, point CURRENT at it, restart (a rolling update).
  await cli(['index', 'build', '--kb', PHENOTYPE_KB, '--out', join(indexRoot, 'kb-v2'), '--no-progress']);
  await cli(['index', 'activate', '--root', indexRoot, '--version', 'kb-v2']);
  const v2 = readIndexManifest(join(indexRoot, 'kb-v2')).indexVersion;
  const second = await startStage(image, command);
  await waitFor(async () => (await status(`${second.url}/readyz`)) === 200, 180_000, `/readyz after the rollout\n${second.output().slice(-2000)}`);
  await cli(['gold-sample', '--corpus', SAMPLE, '--fraction', '1', '--notes-topic', 'cuilink.notes', '--gold-topic', 'cuilink.gold']);
  const { byNote: secondRound } = await linkedBy(v2, 8, firstRecords + 8);
  assert.equal(secondRound.size, 8, 'every sample note came out linked by index version 2');
  assert.equal(seizures(secondRound.get('900001')!).conceptId, 'HP:0001250', 'v2 links seizures to Seizure');
  await stopStage(second, drainTimeoutMs);

  // Notes are PHI: with logPhi off (the shipped configs), no note text reaches the logs.
  for (const stage of [first, second, ...(evaluator ? [evaluator] : [])]) {
    for (const phrase of ['recurrent seizures since infancy', 'Proximal muscle weakness has progressed']) assert.ok(!stage.output().includes(phrase), `note text in the stage's output: ${phrase}`);
  }
  // Read-only root filesystem: the stage wrote nothing into its working directory.
  assert.deepEqual(listTree(app), appTree);
});
