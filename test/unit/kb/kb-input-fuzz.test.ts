import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kbExport } from '../../../src/cli/commands/kb-export.ts';
import { conceptToJsonLine } from '../../../src/kb/jsonl-format.ts';
import { Hierarchy } from '../../../src/kb/hierarchy.ts';
import type { KbFormat } from '../../../src/kb/kb-format.ts';
import { loadKb } from '../../../src/kb/load.ts';
import { capture } from '../../support/capture-console.ts';
import { fuzzPlan, int, pick, guardedFuzzTest, type FuzzCase } from '../../support/guarded-fuzz.ts';
import { mutateBytes } from '../../support/input-mutations.ts';
import { KB_FILE_FORMATS, kbShape, mutateKbJson, renderKb, SIZED_SHAPES } from '../../support/kb-mutants.ts';
import { fixture } from './fixtures.ts';

// The product rule for operator-supplied files: a clear error for bad input. Seeded mutants of the
// KB fixtures (truncated, flipped, invalid UTF-8, CR/CRLF, BOMs, huge lines, gzip damage) and KBs
// of hostile shapes (is-a chains 100k deep, cycles, self-parents, duplicate ids, empty names, odd
// ids, 100k synonyms or parents on one concept) in every format go through loadKb, format
// detection included, and the loaded store through the Hierarchy the evaluator and linker walk;
// some through `cuilink kb export --out`, which must leave no output behind when it refuses.
// Each must load, or be refused with an InputError of a KB code naming the file; never another
// error, a stack overflow or a hang (a generous guard: test/support/guarded-fuzz.ts). A failure
// names seed, case and mutation; rerun it alone with CUILINK_FUZZ_SEED=<seed> CUILINK_FUZZ_CASES=<case + 1>.

/** The seed whose first cases are every sized shape at 100k (fixed, so that a rerun of one seed builds the same cases). */
const EXTREMES_SEED = 20_261_202;
const PLAN = fuzzPlan([EXTREMES_SEED, 11, 5_150], 70);
const KB_CODES = ['PARSE_ERROR', 'INPUT_CORRUPT', 'EMPTY_KB', 'BAD_KB'] as const;

/** Fixture files as they are named (the name picks the loader) and the format each is. */
const FIXTURES: readonly { name: string; format: KbFormat }[] = [
  { name: 'tiny.obo', format: 'obo' },
  { name: 'clinical-mini.obo', format: 'obo' },
  { name: 'tiny.jsonl', format: 'jsonl' },
  { name: 'hierarchy-dag.jsonl', format: 'jsonl' },
  { name: 'ctd-tiny.tsv', format: 'ctd' },
  { name: 'biosyn-tiny.txt', format: 'biosyn' },
  { name: 'tiny-obograph.json', format: 'obograph' },
  { name: 'umls/MRCONSO.RRF', format: 'umls' },
];

/** What a loaded KB must allow: every concept named, none its own parent, and the is-a walks end. */
function checkStore(store: Awaited<ReturnType<typeof loadKb>>): string | undefined {
  for (const c of store) {
    if (c.id.length === 0 || c.name.length === 0) return `a concept without id or name: ${conceptToJsonLine(c).slice(0, 200)}`;
    if (c.parents.includes(c.id)) return `${c.id} is its own parent`;
  }
  const hierarchy = Hierarchy.fromStore(store);
  const ids = [...store].map((c) => c.id);
  const probes = [ids[0], ids[ids.length - 1], ids[ids.length >> 1]].filter((id) => id !== undefined);
  for (const id of probes) {
    hierarchy.ancestors(id);
    hierarchy.neighbourhood(id, 2);
    for (const other of probes) hierarchy.pathLength(id, other);
  }
  store.checksum();
  return undefined;
}

function loadCase(what: string, file: string, format?: KbFormat): FuzzCase {
  return {
    what,
    file,
    codes: KB_CODES,
    run: async () => checkStore(await loadKb([file], format === undefined ? {} : { format })),
  };
}

/** The same file through `cuilink kb export --out`: refused, it must leave no output behind. */
function exportCase(what: string, file: string, dir: string): FuzzCase {
  const out = join(dir, 'export', 'kb.jsonl');
  return {
    what: `kb export of ${what}`,
    file,
    codes: KB_CODES,
    run: async () => {
      mkdirSync(join(dir, 'export'));
      try {
        await capture(() => kbExport.run(['--kb', file, '--out', out]));
      } catch (error) {
        const left = readdirSync(join(dir, 'export'));
        if (left.length > 0) return `refused (${(error as Error).message.slice(0, 100)}) but left ${left.join(', ')} behind`;
        throw error;
      }
      return existsSync(out) ? undefined : 'exported, but no output file';
    },
  };
}

function buildCase(random: () => number, index: number, dir: string, seed: number): FuzzCase {
  const extreme = seed === EXTREMES_SEED && index < SIZED_SHAPES ? index : undefined;
  const kind = extreme !== undefined ? 2 : int(random, 3);
  if (kind === 0) {
    const { name, format } = pick(random, FIXTURES);
    const mutated = mutateBytes(random, readFileSync(fixture(name)));
    const file = join(dir, name.split('/').pop()!);
    writeFileSync(file, mutated.bytes);
    // Half the time the loader is told the format: a renamed file may not be detected as one.
    const told = random() < 0.5 ? format : undefined;
    const what = `${name}: ${mutated.what}${told ? ` (--kb-format ${told})` : ''}`;
    return random() < 0.15 ? exportCase(what, file, dir) : loadCase(what, file, told);
  }
  if (kind === 1) {
    const format = pick(random, ['jsonl', 'obograph'] as const);
    const source = format === 'jsonl' ? 'hierarchy-dag.jsonl' : 'tiny-obograph.json';
    const mutated = mutateKbJson(random, format, readFileSync(fixture(source), 'utf8'));
    const file = join(dir, source);
    writeFileSync(file, mutated.text);
    return loadCase(`${source}: ${mutated.what}`, file);
  }
  const format = pick(random, KB_FILE_FORMATS);
  const shape = kbShape(random, extreme);
  const files = renderKb(format, shape.concepts);
  for (const [name, content] of files) writeFileSync(join(dir, name), content);
  const file = join(dir, files[0]![0]);
  return random() < 0.15 ? exportCase(`${format}: ${shape.what}`, file, dir) : loadCase(`${format}: ${shape.what}`, file);
}

await guardedFuzzTest('mutated and hostile KB files load, or are refused with a KB code naming the file', new URL(import.meta.url), PLAN, buildCase);
