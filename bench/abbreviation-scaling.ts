// findAbbreviationDefinitions against note length: before (the code of commit 76e7cde, read with
// `git show`) and now, on notes of 61K, 100K (the note-size limit, DEFAULT_NOTE_LIMITS), 244K and
// 976K characters of three kinds: NCBI-disease train notes joined by newlines (repeated past
// 748K), a glued definition repeated with no sentence end ("chronic kidney disease
// (CKD)-associated ", each window reaching back over the whole text) and a note with no
// whitespace ("ab(AB)c" repeated: one word). Times cover both `initials` settings, one after the
// other; the definitions of both are compared with the old code's wherever that ran (they differ
// where the old code found long forms over 256 units, which no longer count: the glued and the
// one-word notes, whose old long forms reach back over the whole text). An old run
// whose time, projected from the previous size as quadratic, is over --max-old-s is skipped and
// its projection written instead.
//   node --import tsx bench/abbreviation-scaling.ts [--max-old-s 150] [--out FILE]
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadPubTatorCorpus } from '../src/eval/gold.ts';
import { findAbbreviationDefinitions } from '../src/text/abbreviations.ts';

const BEFORE = '76e7cde';
const SIZES = [61_000, 100_000, 244_000, 976_000];

const { values } = parseArgs({
  options: {
    'max-old-s': { type: 'string', default: '150' },
    corpus: { type: 'string', default: join('..', 'shared', 'data', 'ncbi-disease', 'NCBItrainset_corpus.txt') },
    out: { type: 'string', default: join('bench', 'results', 'abbreviation-scaling.json') },
  },
});
const maxOldMs = Number(values['max-old-s']) * 1000;

type Find = typeof findAbbreviationDefinitions;
const dir = mkdtempSync(join(tmpdir(), 'cuilink-abbreviations-'));
const oldFile = join(dir, 'abbreviations-before.ts');
writeFileSync(oldFile, execFileSync('git', ['show', `${BEFORE}:src/text/abbreviations.ts`], { encoding: 'utf8' }));
const old = ((await import(pathToFileURL(oldFile).href)) as { findAbbreviationDefinitions: Find }).findAbbreviationDefinitions;
rmSync(dir, { recursive: true, force: true });

const ncbi = (await loadPubTatorCorpus(values.corpus)).notes.map((n) => n.text).join('\n');
const repeat = (unit: string, n: number): string => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
const KINDS: Record<string, (n: number) => string> = {
  ncbi: (n) => repeat(`${ncbi}\n`, n),
  glued: (n) => repeat('chronic kidney disease (CKD)-associated ', n),
  'one-word': (n) => repeat('ab(AB)c', n),
};

/**
 * Both settings' definitions (a digest: each one's offsets, its long form's length and ends; a
 * one-word note's long forms run to the whole text before them), and the milliseconds they took:
 * the median of 3 runs, or 1 run when it takes over 2 s.
 */
function measure(find: Find, text: string): { ms: number; digest: string; definitions: number } {
  const times: number[] = [];
  let found: ReturnType<Find>[] = [];
  for (let run = 0; run < 3 && (run === 0 || times[0]! < 2000); run++) {
    const t0 = performance.now();
    found = [find(text), find(text, { initials: true })];
    times.push(performance.now() - t0);
  }
  const hash = createHash('sha256');
  for (const defs of found) for (const d of defs) hash.update(`${d.shortForm}|${d.shortFormStart}|${d.longFormStart}|${d.longFormEnd}|${d.longForm.length}|${d.longForm.slice(0, 32)}|${d.longForm.slice(-32)}\n`);
  const sorted = times.sort((a, b) => a - b);
  return { ms: Math.round(sorted[Math.floor(sorted.length / 2)]! * 10) / 10, digest: hash.digest('hex'), definitions: found[0]!.length + found[1]!.length };
}

interface Row {
  kind: string;
  chars: number;
  definitions: number;
  afterMs: number;
  beforeMs: number | null;
  beforeProjectedMs?: number;
  identical: boolean | null;
}
const rows: Row[] = [];
for (const [kind, make] of Object.entries(KINDS)) {
  let previousOld: number | undefined;
  for (const chars of SIZES) {
    const text = make(chars);
    const after = measure(findAbbreviationDefinitions, text);
    const projected = previousOld === undefined ? 0 : previousOld * (chars / SIZES[SIZES.indexOf(chars) - 1]!) ** 2;
    const row: Row = { kind, chars, definitions: after.definitions, afterMs: after.ms, beforeMs: null, identical: null };
    if (projected <= maxOldMs) {
      const before = measure(old, text);
      row.beforeMs = before.ms;
      row.identical = before.digest === after.digest;
      previousOld = before.ms;
    } else {
      row.beforeProjectedMs = Math.round(projected);
      previousOld = projected;
    }
    rows.push(row);
    const before = row.beforeMs === null ? `skipped (projected ${Math.round(projected / 1000)} s)` : `${row.beforeMs} ms`;
    console.log(`${kind.padEnd(8)} ${String(chars).padStart(7)} chars  ${String(row.definitions).padStart(6)} definitions  before ${before}  after ${row.afterMs} ms  identical ${row.identical ?? '-'}`);
  }
}
writeFileSync(values.out, `${JSON.stringify({ before: BEFORE, node: process.version, sizes: SIZES, rows }, null, 2)}\n`);
console.log(`wrote ${values.out}`);
