import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPubTatorCorpus } from '../../../src/eval/gold.ts';
import { labelledMentionsFromJsonl, labelledMentionsFromPubTator } from '../../../src/eval/memory-sources.ts';
import { fuzzPlan, int, pick, guardedFuzzTest, type FuzzCase } from '../../support/guarded-fuzz.ts';
import { mutateBytes, mutateJson } from '../../support/input-mutations.ts';

// The product rule for operator-supplied files: a clear error for bad input. The corpora `cuilink
// eval` and `cuilink memory add` read (PubTator files, gold JSONL) are mutated from valid ones
// (bytes: truncated, flipped, invalid UTF-8, CR/CRLF, BOMs, huge lines, gzip damage; structure:
// offsets past the text or out of number range, 100k annotations or ids on one line, repeated
// documents; JSON lines with wrong types, `__proto__` keys, deep nesting) and read through the real
// readers. Each must load, or be refused with an InputError of a reader's code naming the file
// (and its line); never another error, a stack overflow or a hang (a generous guard:
// test/support/guarded-fuzz.ts). A failure names seed, case and mutation; rerun it alone with
// CUILINK_FUZZ_SEED=<seed> CUILINK_FUZZ_CASES=<case + 1>.

const PLAN = fuzzPlan([20_261_204, 17, 9_001], 80);
const PUBTATOR_CODES = ['PARSE_ERROR', 'INPUT_CORRUPT'];
const GOLD_CODES = ['BAD_MEMORY', 'BAD_FLAGS'];

const PUBTATOR_FIXTURES = ['test/fixtures/eval/sample.PubTator', 'test/fixtures/eval/stream-sample.PubTator'];

/** Labelled mentions as `cuilink memory export` writes them, one of each optional field's forms. */
const GOLD_LINES: readonly Record<string, unknown>[] = [
  { text: 'colon cancer', label: 'SpecificDisease', ids: ['MESH:D003110'], context: 'Patients with colon cancer had anemia.', source: 'corpus:learn', time: 1_700_000_000_000, noteId: '1001', mentionId: '46-58' },
  { text: 'Breast and ovarian cancer', label: 'CompositeMention', conceptId: 'D001943|D010051', noteId: null, mentionId: null },
  { text: 'anemia', ids: ['D000740', 'OMIM:613097'], seq: 3 },
];

/** PubTator documents of hostile structure, written out whole. */
function pubTatorShape(random: () => number): { what: string; text: string } {
  const title = 'Colon cancer and breast cancer.';
  const head = (pmid: string) => `${pmid}|t|${title}\n${pmid}|a|Patients had anemia.\n`;
  const n = pick(random, [3, 1_000, 100_000]);
  switch (int(random, 5)) {
    case 0:
      return { what: `${n} annotations on one document`, text: `${head('1')}${Array.from({ length: n }, (_, i) => `1\t0\t12\tColon cancer\tDisease\tD${String(i).padStart(6, '0')}\n`).join('')}` };
    case 1: {
      const ids = Array.from({ length: n }, (_, i) => `D${String(i).padStart(6, '0')}`).join(pick(random, ['|', '+']));
      return { what: `an annotation with ${n} composite ids`, text: `${head('1')}1\t0\t12\tColon cancer\tDisease\t${ids}\n` };
    }
    case 2: {
      const [start, end] = pick(random, [['99999999999999999999', '99999999999999999999999'], ['0', '1e3'], ['-1', '5'], ['0x0', '12'], ['12', '0'], [' 0', '12'], ['0', '12.0'], ['4294967296', '4294967300']]);
      return { what: `offsets ${start}..${end}`, text: `${head('1')}1\t${start}\t${end}\tColon cancer\tDisease\tD003110\n` };
    }
    case 3:
      return { what: `one document ${n} times`, text: Array.from({ length: n }, () => `${head('7')}7\t0\t12\tColon cancer\tDisease\tD003110\n\n`).join('') };
    default: {
      const pmid = pick(random, ['', ' ', '\u0000', 'é', '__proto__', 'constructor', '1|t', 'x'.repeat(100_000)]);
      return { what: `PMID ${JSON.stringify(pmid.slice(0, 20))}`, text: `${pmid}|t|${title}\n${pmid}\t0\t5\tColon\tDisease\tD003110\n` };
    }
  }
}

function goldJsonl(random: () => number): { what: string; text: string } {
  const lines = GOLD_LINES.map((line) => JSON.stringify(line));
  const kind = int(random, 3);
  if (kind === 0) {
    const at = int(random, lines.length);
    const mutated = mutateJson(random, GOLD_LINES[at]);
    lines[at] = mutated.text.replaceAll('\n', ' ');
    return { what: `line ${at + 1}: ${mutated.what}`, text: `${lines.join('\n')}\n` };
  }
  if (kind === 1) {
    const n = pick(random, [1_000, 100_000]);
    return { what: `a line with ${n} ids`, text: `${JSON.stringify({ text: 'anemia', ids: Array.from({ length: n }, (_, i) => `D${String(i).padStart(6, '0')}`) })}\n` };
  }
  const mutated = mutateBytes(random, Buffer.from(`${lines.join('\n')}\n`));
  return { what: mutated.what, text: mutated.bytes.toString('latin1') };
}

function buildCase(random: () => number, _index: number, dir: string): FuzzCase {
  if (random() < 0.3) {
    const file = join(dir, 'labels.jsonl');
    const gold = goldJsonl(random);
    writeFileSync(file, gold.text, 'latin1');
    return { what: `gold JSONL: ${gold.what}`, file, codes: GOLD_CODES, run: () => void labelledMentionsFromJsonl(file) };
  }
  const file = join(dir, 'corpus.PubTator');
  let what: string;
  if (random() < 0.6) {
    const fixture = pick(random, PUBTATOR_FIXTURES);
    const mutated = mutateBytes(random, readFileSync(fixture));
    writeFileSync(file, mutated.bytes);
    what = `${fixture.split('/').pop()}: ${mutated.what}`;
  } else {
    const shape = pubTatorShape(random);
    writeFileSync(file, shape.text);
    what = shape.what;
  }
  const reader = pick(random, ['eval', 'memory add'] as const);
  return {
    what: `PubTator (${reader}): ${what}`,
    file,
    codes: PUBTATOR_CODES,
    run: async () => void (reader === 'eval' ? await loadPubTatorCorpus(file) : await labelledMentionsFromPubTator(file)),
  };
}

await guardedFuzzTest('mutated PubTator corpora and gold JSONL files load, or are refused with a reader code naming the file', new URL(import.meta.url), PLAN, buildCase);
