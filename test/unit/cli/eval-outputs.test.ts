import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeEvalCommand } from '../../../src/cli/commands/eval.ts';
import type { LinkingCore } from '../../../src/link/types.ts';
import { fakeLinker, SAMPLE_TABLE } from '../eval/fake-linker.ts';

const INDEX = 'test/fixtures/eval/index';
const CORPUS = 'test/fixtures/eval/sample.PubTator';

async function quietly<T>(fn: () => Promise<T>): Promise<T> {
  const original = console.log;
  console.log = () => {};
  try {
    return await fn();
  } finally {
    console.log = original;
  }
}

function inTemp(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-eval-outputs-'));
  return fn(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

/** The fake linker, counting its calls; with `confidence` its links carry one, as a calibrated linker's do. */
function opener(confidence?: number) {
  const state = { opened: 0, calls: 0, closed: 0 };
  const open = async (): Promise<LinkingCore> => {
    state.opened++;
    const core = fakeLinker(SAMPLE_TABLE);
    return {
      versions: core.versions,
      calibrated: confidence !== undefined,
      async linkNotes(notes) {
        state.calls++;
        const linked = await core.linkNotes(notes);
        if (confidence !== undefined) for (const note of linked) for (const m of note.mentions) if (m.candidates.length > 0) m.confidence = confidence;
        return linked;
      },
      async close() {
        state.closed++;
      },
    };
  };
  return { state, open };
}

test('eval --reliability with --calibration none: refused before the corpus loads or a linker opens', async () => {
  const { state, open } = opener();
  await assert.rejects(makeEvalCommand(open).run(['--index', INDEX, '--corpus', CORPUS, '--calibration', 'none', '--reliability', 'r.svg']), (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && e.message === '--reliability: the links have no confidence with --calibration none');
  assert.equal(state.opened, 0);
});

test('eval --reliability from a linker without a calibration: refused once it opens, before the corpus is linked', async () => {
  await inTemp(async (dir) => {
    const { state, open } = opener();
    const out = join(dir, 'report.json');
    await assert.rejects(quietly(() => makeEvalCommand(open).run(['--index', INDEX, '--corpus', CORPUS, '--batch', '1', '--out', out, '--reliability', join(dir, 'r.svg')])), /^InputError: --reliability: the links have no confidence \(no calibration\)$/);
    assert.equal(state.calls, 0, 'nothing linked');
    assert.equal(state.closed, 1);
    assert.ok(!existsSync(out));
  });
});

test('eval --reliability from a calibrated linker: the diagram and the report are written', async () => {
  await inTemp(async (dir) => {
    const { open } = opener(0.7);
    const [out, svg] = [join(dir, 'report.json'), join(dir, 'r.svg')];
    assert.equal(await quietly(() => makeEvalCommand(open).run(['--index', INDEX, '--corpus', CORPUS, '--out', out, '--reliability', svg])), 0);
    assert.match(readFileSync(svg, 'utf8'), /^<svg/);
    assert.equal((JSON.parse(readFileSync(out, 'utf8')) as { metrics: { overall: { acc1: number } } }).metrics.overall.acc1, 0.625);
  });
});

test('eval: an unwritable --out, --errors, --predictions or --reliability fails before the linker opens', async () => {
  for (const flag of ['out', 'errors', 'predictions', 'reliability']) {
    const { state, open } = opener(0.7);
    await assert.rejects(makeEvalCommand(open).run(['--index', INDEX, '--corpus', CORPUS, `--${flag}`, '/nonexistent-dir/x']), (e: Error & { code?: string }) => e.code === 'OUTPUT_ERROR' && e.message.startsWith(`--${flag}: cannot write /nonexistent-dir/x: ENOENT`), flag);
    assert.equal(state.opened, 0, flag);
  }
});

test('eval --memory naming no memory is refused before the linker opens', async () => {
  const { state, open } = opener();
  await assert.rejects(makeEvalCommand(open).run(['--index', INDEX, '--corpus', CORPUS, '--memory', '/nonexistent-memory-root']), /--memory \/nonexistent-memory-root: no such memory root or version directory/);
  assert.equal(state.opened, 0);
});
