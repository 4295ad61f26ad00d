import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Hierarchy } from '../../../src/kb/hierarchy.ts';
import { loadKb } from '../../../src/kb/load.ts';
import { guardedFuzzTest, type FuzzCase } from '../../support/guarded-fuzz.ts';
import { renderKb, type KbFileFormat, type ShapeConcept } from '../../support/kb-mutants.ts';

// A concept's lists were kept distinct by a scan per added item, so 200k synonyms (or 800k
// parents, or 300k lines of one id, or 200k alt ids that later lines take as their ids) took minutes
// to load: the loader looked hung. Each case below loads in a second or two now; the guard that
// fails it is a minute, not a timed assertion.

const MANY = 200_000;
const concept = (id: string, name: string, more: Partial<ShapeConcept> = {}): ShapeConcept => ({ id, name, synonyms: [], parents: [], altIds: [], ...more });
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

interface LongCase {
  what: string;
  format: KbFileFormat;
  concepts: ShapeConcept[];
  check: (store: Awaited<ReturnType<typeof loadKb>>) => string | undefined;
}

const synonymsOf = (store: Awaited<ReturnType<typeof loadKb>>) => [...store][0]?.synonyms.length;

const CASES: LongCase[] = [
  ...(['obo', 'ctd', 'biosyn', 'umls', 'obograph'] as const).map((format): LongCase => ({
    what: `${MANY} synonyms on one ${format} concept`,
    format,
    concepts: [concept('T:1', 'many names', { synonyms: range(MANY).map((i) => `synonym ${i % (MANY - 10)}`) })],
    check: (store) => (synonymsOf(store) === MANY - 10 ? undefined : `${synonymsOf(store)} synonyms kept, not ${MANY - 10}`),
  })),
  {
    what: `one id on ${1.5 * MANY} lines, a synonym each`,
    format: 'jsonl',
    concepts: range(1.5 * MANY).map((i) => concept('T:1', 'one', { synonyms: [`synonym ${i}`] })),
    check: (store) => (store.size === 1 && synonymsOf(store) === 1.5 * MANY ? undefined : `${store.size} concepts, ${synonymsOf(store)} synonyms`),
  },
  {
    what: `${4 * MANY} parents on one concept`,
    format: 'jsonl',
    concepts: [concept('T:1', 'many parents', { parents: range(4 * MANY).map((i) => `T:p${i}`) })],
    check: (store) => (Hierarchy.fromStore(store).parentsOf('T:1').length === 4 * MANY ? undefined : 'parents lost'),
  },
  {
    what: `${MANY} concepts, each listing the next one's id as an alt id`,
    format: 'jsonl',
    concepts: range(MANY).map((i) => concept(`T:${i}`, `term ${i}`, { altIds: [`T:${i + 1}`] })),
    // Only the last one's alt id names no concept.
    check: (store) => (store.size === MANY && [...store].filter((c) => c.altIds.length > 0).length === 1 ? undefined : 'alt ids that are concept ids were kept'),
  },
];

function buildCase(_random: () => number, index: number, dir: string): FuzzCase {
  const long = CASES[index]!;
  const files = renderKb(long.format, long.concepts);
  for (const [name, content] of files) writeFileSync(join(dir, name), content);
  const file = join(dir, files[0]![0]);
  return { what: long.what, file, codes: [], run: async () => long.check(await loadKb([file])) };
}

await guardedFuzzTest('hundreds of thousands of synonyms, parents, lines or alt ids on one concept load without a hang', new URL(import.meta.url), { seeds: [0], cases: CASES.length }, buildCase, { timeoutMs: 900_000, guardMs: 60_000 });
