import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPubTatorCorpus } from '../../../src/eval/gold.ts';
import { InputError, ParseError } from '../../../src/kb/errors.ts';
import { labelledMentionsFromJsonl } from '../../../src/eval/memory-sources.ts';
import { guardedFuzzTest, type FuzzCase } from '../../support/guarded-fuzz.ts';

// The ids of a gold field were kept distinct by a scan per id, so a composite of 400k ids (a
// PubTator annotation, a gold JSONL line of `cuilink memory add`) took minutes to read: the reader
// looked hung. Each reads in well under a second now (then refused, naming their distinct ids: more
// than a gold label may name); the guard that fails it is minutes, not a timed
// assertion.

const MANY = 400_000;
const ids = Array.from({ length: MANY }, (_, i) => `D${String(i % (MANY - 5)).padStart(6, '0')}`);

const CASES: { what: string; file: string; content: string; read: (file: string) => Promise<number> }[] = [
  {
    // More ids than a gold label may name (MAX_GOLD_IDS): refused, the distinct ids counted in the message.
    what: `a PubTator annotation with ${MANY} composite ids`,
    file: 'corpus.PubTator',
    content: `1|t|Colon cancer.\n1\t0\t12\tColon cancer\tDisease\t${ids.join('|')}\n`,
    read: async (file) => {
      let counted = 0;
      await assert.rejects(loadPubTatorCorpus(file), (e: unknown) => e instanceof ParseError && (counted = Number(/naming (\d+) concept ids/.exec(e.message)?.[1] ?? 0)) > 0);
      return counted;
    },
  },
  {
    what: `a gold JSONL line with ${MANY} ids`,
    file: 'labels.jsonl',
    content: `${JSON.stringify({ text: 'colon cancer', ids })}\n`,
    read: (file) => {
      let counted = 0;
      assert.throws(() => labelledMentionsFromJsonl(file), (e: unknown) => e instanceof InputError && e.code === 'BAD_MEMORY' && (counted = Number(/naming (\d+) concept ids/.exec(e.message)?.[1] ?? 0)) > 0);
      return Promise.resolve(counted);
    },
  },
];

function buildCase(_random: () => number, index: number, dir: string): FuzzCase {
  const { what, file: name, content, read } = CASES[index]!;
  const file = join(dir, name);
  writeFileSync(file, content);
  return { what, file, codes: [], run: async () => ((await read(file)) === MANY - 5 ? undefined : 'distinct ids lost or repeated') };
}

await guardedFuzzTest('a gold field of 400k composite ids reads without a hang, each id once', new URL(import.meta.url), { seeds: [0], cases: CASES.length }, buildCase, { timeoutMs: 900_000, guardMs: 90_000 });
