/**
 * Memory of the UMLS loader per million names, so the README can say what a full UMLS needs.
 * Writes a synthetic MRCONSO.RRF (+ MRSTY.RRF) shaped like the real one (18 fields, several
 * sources per CUI, ~2.5 English names per concept, one TS=P/STT=PF/ISPREF=Y row per CUI), loads it
 * with loadKb and records heap and RSS growth after a forced GC.
 *
 *   node --expose-gc --import tsx bench/kb-memory.bench.ts [names=1000000]
 *
 * Output: stdout summary and bench/results/kb-memory.json.
 */
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadKb } from '../src/kb/load.ts';

const totalNames = Number(process.argv[2] ?? 1_000_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('run with node --expose-gc so that heap numbers are after a full collection');
  process.exit(2);
}

const WORDS = ('diabetes mellitus type insulin dependent juvenile onset adult chronic acute syndrome disease disorder ' +
  'deficiency carcinoma neoplasm malignant benign tumor of the left right kidney liver heart lung brain bone skin ' +
  'familial hereditary congenital idiopathic primary secondary infection viral bacterial fungal inflammation ' +
  'hypertension hypotension failure stenosis atrophy dystrophy muscular spinal cerebral renal hepatic pulmonary').split(' ');
const SOURCES = ['MSH', 'SNOMEDCT_US', 'NCI', 'MDR', 'ICD10CM', 'MEDLINEPLUS', 'OMIM', 'HPO'];

let seed = 12345;
function random(n: number): number {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return (seed >>> 8) % n; // the low bits of a power-of-two LCG cycle quickly
}

function phrase(): string {
  const words: string[] = [];
  const count = 2 + random(5);
  for (let i = 0; i < count; i++) words.push(WORDS[random(WORDS.length)]!);
  return words.join(' ') + (random(3) === 0 ? ` ${random(100)}` : '');
}

async function writeSynthetic(dir: string): Promise<{ concepts: number; rows: number }> {
  const conso = createWriteStream(join(dir, 'MRCONSO.RRF'));
  const sty = createWriteStream(join(dir, 'MRSTY.RRF'));
  let rows = 0;
  let cui = 0;
  let buffer = '';
  let styBuffer = '';
  while (rows < totalNames) {
    cui++;
    const id = `C${String(cui).padStart(7, '0')}`;
    const names = 1 + random(4); // 1..4, mean 2.5
    for (let k = 0; k < names && rows < totalNames; k++, rows++) {
      const preferred = k === 1 || names === 1;
      const sab = SOURCES[random(SOURCES.length)]!;
      const str = k === 0 ? `${phrase()} ${id.slice(-4)}` : phrase();
      buffer += `${id}|ENG|${preferred ? 'P' : 'S'}|L${rows}|PF|S${rows}|${preferred ? 'Y' : 'N'}|A${rows}||||${sab}|PT|${random(1e6)}|${str}|0|N|256|\n`;
    }
    styBuffer += `${id}|T047|B2.2.1.2.1|Disease or Syndrome|AT${cui}||\n`;
    if (buffer.length > 1 << 20) {
      if (!conso.write(buffer)) await once(conso, 'drain');
      if (!sty.write(styBuffer)) await once(sty, 'drain');
      buffer = '';
      styBuffer = '';
    }
  }
  conso.end(buffer);
  sty.end(styBuffer);
  await Promise.all([once(conso, 'finish'), once(sty, 'finish')]);
  return { concepts: cui, rows };
}

const dir = mkdtempSync(join(tmpdir(), 'cuilink-kb-bench-'));
try {
  const synthetic = await writeSynthetic(dir);
  const fileBytes = statSync(join(dir, 'MRCONSO.RRF')).size;
  gc();
  const before = process.memoryUsage();
  const started = performance.now();
  const store = await loadKb([join(dir, 'MRCONSO.RRF')]);
  const seconds = (performance.now() - started) / 1000;
  gc();
  const after = process.memoryUsage();
  const millions = store.nameCount / 1e6;
  const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
  const result = {
    benchmark: 'kb-memory',
    date: new Date().toISOString(),
    node: process.version,
    input: { format: 'synthetic MRCONSO.RRF + MRSTY.RRF', rows: synthetic.rows, mrconsoMiB: mib(fileBytes) },
    loaded: { concepts: store.size, names: store.nameCount },
    seconds: Math.round(seconds * 100) / 100,
    namesPerSecond: Math.round(store.nameCount / seconds),
    heapUsedMiB: { before: mib(before.heapUsed), after: mib(after.heapUsed), perMillionNames: mib((after.heapUsed - before.heapUsed) / millions) },
    rssMiB: { before: mib(before.rss), after: mib(after.rss), perMillionNames: mib((after.rss - before.rss) / millions), peak: mib(process.resourceUsage().maxRSS * 1024) },
    // A full UMLS (2024AA, English, unsuppressed) is ~10–11M names over ~3.3M concepts.
    projectedFullUmlsHeapGiB: Math.round(((after.heapUsed - before.heapUsed) / millions) * 11 / 2 ** 30 * 10) / 10,
  };
  console.log(JSON.stringify(result, null, 2));
  const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'kb-memory.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  // Keep the store reachable until after the measurement.
  if (store.size === 0) console.log('empty');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
