import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import { fuzzPlan, int, pick, guardedFuzzTest, type FuzzCase } from '../../support/guarded-fuzz.ts';
import { mutateBytes, mutateJson } from '../../support/input-mutations.ts';
import { editManifest, encoder, label, MODEL } from '../../support/memory-files.ts';
import { lowerNormalize } from '../../support/trigram-encoder.ts';

// The product rule for a memory version an operator copies, restores or edits (docs/memory.md):
// it opens, or it is refused with BAD_MEMORY or BAD_INDEX naming the file; never another error,
// a crash of the process or a hang. A version's records.jsonl and prototypes.hnsw, written by the
// real writer (raw-text and hashed memories, one with a retracted label), are mutated: JSON lines
// with wrong types, `__proto__` keys, 1e400, deep nesting; bytes truncated, flipped, repeated,
// gzipped; HNSW link ids past the elements. Most go under a manifest without checksums (a
// version written before them, which only its shape guards); the rest under the checksums, which
// refuse any change. What opens must answer a search, learn a label, save, and the saved version
// open again. The manifest itself is fuzzed by test/unit/cli/config-input-fuzz.test.ts. A failure
// names seed, case and mutation; rerun it alone with CUILINK_FUZZ_SEED=<seed> CUILINK_FUZZ_CASES=<case + 1>.

const PLAN = fuzzPlan([20_261_207, 29, 3_003], 120);
/** The versions the mutants start from, written once per worker. */
let versions: string[];

function writeVersions(root: string): string[] {
  const records = [label('heart attack', 'D1'), label('sugar sickness', 'D2'), label('lung fire', 'D3')];
  const store = MemoryStore.empty(MODEL, lowerNormalize);
  store.add(records, records.map((r) => encoder.vector(r.text)));
  const first = join(root, 'mem', store.save(join(root, 'mem')).memoryVersion);
  store.remove([1]);
  const retracted = join(root, 'mem', store.save(join(root, 'mem')).memoryVersion);
  const hashed = MemoryStore.empty(MODEL, lowerNormalize, { rawText: false });
  hashed.add(records, records.map((r) => encoder.vector(r.text)));
  return [first, retracted, join(root, 'hashed', hashed.save(join(root, 'hashed')).memoryVersion)];
}

/** A level-0 link of one element set to an id past the elements (hnswlib follows it at search). */
function linkMutant(random: () => number, bytes: Buffer): { what: string; bytes: Buffer } {
  const out = Buffer.from(bytes);
  const [count, elementBytes] = [Number(out.readBigUInt64LE(16)), Number(out.readBigUInt64LE(24))];
  const [element, slot] = [int(random, count), int(random, 4)];
  const id = pick(random, [count, count + 1, 1023, 1024, 2 ** 20, 2 ** 31, 2 ** 32 - 1]);
  out.writeUInt32LE(id, 96 + element * elementBytes + 4 + 4 * slot);
  // The link count raised so that the slot is read.
  out.writeUInt16LE(Math.max(out.readUInt16LE(96 + element * elementBytes), slot + 1), 96 + element * elementBytes);
  return { what: `element ${element}, link ${slot} := ${id}`, bytes: out };
}

function buildCase(random: () => number, _index: number, dir: string): FuzzCase {
  const source = pick(random, versions);
  const copy = join(dir, 'version');
  cpSync(source, copy, { recursive: true });
  const checksummed = random() < 0.2;
  if (!checksummed) editManifest(copy, (m) => delete m.checksums);
  const target = random() < 0.5 ? 'records.jsonl' : 'prototypes.hnsw';
  const file = join(copy, target);
  let what: string;
  if (target === 'records.jsonl' && random() < 0.6) {
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    const at = int(random, lines.length);
    const mutated = mutateJson(random, JSON.parse(lines[at]!));
    lines[at] = mutated.text.replaceAll('\n', ' ');
    writeFileSync(file, `${lines.join('\n')}\n`);
    what = `line ${at + 1}: ${mutated.what}`;
  } else {
    const mutated = target === 'prototypes.hnsw' && random() < 0.3 ? linkMutant(random, readFileSync(file)) : mutateBytes(random, readFileSync(file));
    writeFileSync(file, mutated.bytes);
    what = mutated.what;
  }
  return {
    what: `${source.split('/').slice(-2).join('/')}${checksummed ? '' : ' (no checksums)'} ${target}: ${what}`,
    file: copy,
    codes: ['BAD_MEMORY', 'BAD_INDEX'],
    run: () => {
      const store = MemoryStore.open(copy, lowerNormalize);
      store.list();
      store.nearest(encoder.vector('heart attack'), 3);
      store.surfaceCounts('sugar sickness');
      store.add([label('brain fog', 'D9')], [encoder.vector('brain fog')]);
      const saved = store.save(join(dir, 'saved'));
      MemoryStore.open(join(dir, 'saved', saved.memoryVersion), lowerNormalize).nearest(encoder.vector('brain fog'), 2);
      return undefined;
    },
  };
}

let root = '';
await guardedFuzzTest('mutated memory records and prototypes open (and learn, save and open again), or are refused with BAD_MEMORY or BAD_INDEX naming the version', new URL(import.meta.url), PLAN, buildCase, {
  prepare: () => {
    root = mkdtempSync(join(tmpdir(), 'cuilink-memory-fuzz-'));
    versions = writeVersions(root);
  },
  cleanup: () => rmSync(root, { recursive: true, force: true }),
});
