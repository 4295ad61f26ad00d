// The link cache's honest benchmark: a FIRST pass over text the linker has not seen in its
// process (NCBI-disease train + dev as one stream, cold cache), and the worst case (each distinct
// mention string once). Each setting is opened fresh per round (cold cache); rounds interleave
// the settings so machine load hits them alike; medians of the rounds. Used by bench/link.bench.ts;
// alone: node --import tsx bench/first-pass.ts [--rounds N] [--threads N] [--notes N]
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { loadPubTatorCorpus, mentionKey, type GoldCorpus } from '../src/eval/gold.ts';
import type { OntologyView } from '../src/eval/metrics/ontology-view.ts';
import { computeMetrics } from '../src/eval/metrics/metrics-accumulator.ts';
import { joinMention } from '../src/eval/mention-join.ts';
import { scoreRecord } from '../src/eval/metrics/score-mention.ts';
import type { Linker } from '../src/link/linker.ts';
import { openLinker, type OpenLinkerOptions } from '../src/link/open-linker.ts';
import type { LinkedMention, NoteInput } from '../src/link/types.ts';

export interface FirstPassSetting {
  name: string;
  config: Record<string, unknown>;
  threads?: number;
  /** Intermediate steps run in the first round only (the shared machine's time is short). */
  firstRoundOnly?: boolean;
  /** Another cross-encoder than the run's (its links are then not expected to equal the uncached ones). */
  rerankerDir?: string | false;
}

/**
 * Uncached: the default linker without the link cache and without exact-name vectors, every
 * mention encoded (the reference every other setting is compared to, link by link).
 */
export const UNCACHED: FirstPassSetting = { name: 'uncached', config: { cache: { maxEntries: 0 }, exactVectors: false } };
/** Each step of the speed-up, then the default, then the default without rerank pruning. */
export const DEFAULT_SETTINGS: FirstPassSetting[] = [
  UNCACHED,
  { name: 'cache', config: { exactVectors: false }, firstRoundOnly: true },
  { name: 'cache + exact vectors (default)', config: {} },
  { name: 'default without rerank pruning', config: { rerank: { prune: false } }, firstRoundOnly: true },
  // What the cache is worth: a context-reading cross-encoder turned it off before issue 26.
  { name: 'default without the link cache', config: { cache: { maxEntries: 0 } }, firstRoundOnly: true },
  { name: 'default with 2 threads per session', config: {}, threads: 2, firstRoundOnly: true },
];

export interface SettingResult {
  name: string;
  threads: number | null;
  /** Per round (one round for the intermediate steps). */
  mentionsPerSecond: number[];
  medianMentionsPerSecond: number;
  worstCaseMentionsPerSecond: number[];
  medianWorstCaseMentionsPerSecond: number;
  /** Hit ratio of the first pass (repeats within a call count as hits). */
  hitRatio: number;
  devAcc1: number | null;
  devAcc5: number | null;
  /** Mentions of the whole stream whose top-1 (concept or score) / candidate list differ from the uncached linker's. */
  top1DiffersFromUncached: number;
  /** … whose top-1 concept differs (a score that moves in its last digits is not counted). */
  top1ConceptDiffersFromUncached: number;
  candidatesDifferFromUncached: number;
  /** … whose candidate concept ids (in order) differ. */
  candidateIdsDifferFromUncached: number;
  ratioToUncached: number;
  loadavg1: number[];
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Each distinct (mention text, label) of the stream once, eight to a synthetic note. */
export function worstCaseNotes(notes: readonly NoteInput[]): NoteInput[] {
  const seen = new Set<string>();
  const out: NoteInput[] = [];
  let current: NoteInput | undefined;
  for (const m of notes.flatMap((n) => n.mentions)) {
    const key = `${m.label}\u0000${m.text}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (!current || current.mentions.length === 8) {
      current = { noteId: `distinct-${out.length}`, text: '', mentions: [] };
      out.push(current);
    }
    const start = current.text.length;
    current.text += `${m.text} ; `;
    current.mentions.push({ id: String(current.mentions.length), start, end: start + m.text.length, text: m.text, label: m.label });
  }
  return out;
}

async function linkAll(linker: Linker, notes: readonly NoteInput[], batchSize: number): Promise<{ seconds: number; linked: Map<string, LinkedMention> }> {
  const linked = new Map<string, LinkedMention>();
  let seconds = 0;
  for (let i = 0; i < notes.length; i += batchSize) {
    const t0 = performance.now();
    const out = await linker.linkNotes(notes.slice(i, i + batchSize));
    seconds += (performance.now() - t0) / 1000;
    for (const n of out) for (const m of n.mentions) linked.set(mentionKey(n.noteId, m.mentionId), m);
  }
  return { seconds, linked };
}

export interface FirstPassOptions {
  open: Omit<OpenLinkerOptions, 'config' | 'threads'>;
  train: GoldCorpus;
  dev: GoldCorpus;
  view: OntologyView;
  rounds: number;
  settings?: FirstPassSetting[];
  batchSize?: number;
  log?: (line: string) => void;
}

export async function runFirstPass(options: FirstPassOptions) {
  const { train, dev, view, rounds } = options;
  const settings = options.settings ?? DEFAULT_SETTINGS;
  const batchSize = options.batchSize ?? 32;
  const log = options.log ?? console.log;
  const stream = [...train.notes, ...dev.notes];
  const mentions = stream.reduce((n, note) => n + note.mentions.length, 0);
  const worst = worstCaseNotes(stream);
  const distinct = worst.reduce((n, note) => n + note.mentions.length, 0);
  const acc = new Map<string, { rates: number[]; worst: number[]; loads: number[]; hitRatio: number; linked?: Map<string, LinkedMention> }>();
  for (let round = 0; round < rounds; round++) {
    for (const s of settings) {
      if (s.firstRoundOnly && round > 0) continue;
      const linker = await openLinker({ ...options.open, ...(s.rerankerDir === undefined ? {} : { rerankerDir: s.rerankerDir }), threads: s.threads, config: s.config });
      await linker.linkNotes([{ noteId: 'warm-up', text: 'warm up zzz', mentions: [{ id: '0', start: 0, end: 7, text: 'warm up', label: 'Disease' }] }]);
      linker.invalidateCache();
      const load = loadavg()[0]!;
      const before = linker.cacheStats();
      const first = await linkAll(linker, stream, batchSize);
      const after = linker.cacheStats();
      linker.invalidateCache();
      const worstRun = await linkAll(linker, worst, batchSize);
      await linker.close();
      const entry = acc.get(s.name) ?? { rates: [], worst: [], loads: [], hitRatio: 0 };
      entry.rates.push(mentions / first.seconds);
      entry.worst.push(distinct / worstRun.seconds);
      entry.loads.push(load);
      const lookups = after && before ? after.hits - before.hits + (after.misses - before.misses) : 0;
      entry.hitRatio = after && before && lookups > 0 ? (after.hits - before.hits) / lookups : 0;
      entry.linked ??= first.linked;
      acc.set(s.name, entry);
      log(`  round ${round + 1} ${s.name}: first pass ${(mentions / first.seconds).toFixed(0)} mentions/s (hit ratio ${entry.hitRatio.toFixed(3)}), worst case ${(distinct / worstRun.seconds).toFixed(0)} mentions/s, load ${load.toFixed(2)}`);
    }
  }
  const reference = acc.get(settings[0]!.name)!;
  const results: SettingResult[] = settings.map((s) => {
    const e = acc.get(s.name)!;
    let top1 = 0;
    let top1Concept = 0;
    let cands = 0;
    let ids = 0;
    for (const [key, m] of e.linked!) {
      const r = reference.linked!.get(key)!;
      if (r.conceptId !== m.conceptId || r.score !== m.score) top1++;
      if (r.conceptId !== m.conceptId) top1Concept++;
      if (JSON.stringify(r.candidates) !== JSON.stringify(m.candidates)) cands++;
      if (r.candidates.map((c) => c.conceptId).join() !== m.candidates.map((c) => c.conceptId).join()) ids++;
    }
    const devScored = [...dev.gold].map(([key, gold]) => scoreRecord(joinMention(gold, e.linked!.get(key)!, view), view));
    const metrics = computeMetrics(devScored).overall;
    return {
      name: s.name,
      threads: s.threads ?? null,
      mentionsPerSecond: e.rates,
      medianMentionsPerSecond: median(e.rates),
      worstCaseMentionsPerSecond: e.worst,
      medianWorstCaseMentionsPerSecond: median(e.worst),
      hitRatio: e.hitRatio,
      devAcc1: metrics.acc1,
      devAcc5: metrics.acc5,
      top1DiffersFromUncached: top1,
      top1ConceptDiffersFromUncached: top1Concept,
      candidatesDifferFromUncached: cands,
      candidateIdsDifferFromUncached: ids,
      ratioToUncached: median(e.rates) / median(reference.rates),
      loadavg1: e.loads,
    };
  });
  return { stream: { notes: stream.length, mentions, distinctMentions: distinct, devMentions: dev.gold.size }, rounds, batchSize, results };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { parseArgs } = await import('node:util');
  const { join } = await import('node:path');
  const { kbOntologyView, loadIndexKb } = await import('../src/eval/kb-ontology-view.ts');
  const { ensureBenchIndex } = await import('./bench-index.ts');
  const { MEDIC_KB_FLAGS, medicKb } = await import('./medic-kb.ts');
  const { DEFAULT_MODEL_DIR } = await import('../src/link/default-index.ts');
  const { values } = parseArgs({ options: { ...MEDIC_KB_FLAGS, rounds: { type: 'string', default: '1' }, threads: { type: 'string' }, notes: { type: 'string' }, index: { type: 'string' } } });
  // The bench:link index (MEDIC + supplement + xref names), built on first use, unless --index names another.
  const indexDir = values.index ?? ensureBenchIndex({ ...medicKb(values), modelDir: DEFAULT_MODEL_DIR, provider: 'cpu', log: console.error }).indexDir;
  const data = join('..', 'shared', 'data', 'ncbi-disease');
  const train = await loadPubTatorCorpus(join(data, 'NCBItrainset_corpus.txt'));
  const dev = await loadPubTatorCorpus(join(data, 'NCBIdevelopset_corpus.txt'));
  if (values.notes) train.notes = train.notes.slice(0, Number(values.notes));
  const view = kbOntologyView(await loadIndexKb(indexDir));
  // --threads 1,2: every chosen setting once per intra-op thread count (per ONNX session).
  const threadList = values.threads === undefined ? [undefined] : values.threads.split(',').map(Number);
  const only = process.env.FIRST_PASS_ONLY?.split(',').map(Number);
  const chosen = DEFAULT_SETTINGS.filter((_, i) => only === undefined || only.includes(i));
  const settings = threadList.flatMap((threads) => chosen.map((s) => ({ ...s, firstRoundOnly: false, threads, name: threads === undefined ? s.name : `${s.name}, ${threads} thread(s)` })));
  const out = await runFirstPass({ open: { indexDir, provider: 'cpu' }, train, dev, view, rounds: Number(values.rounds), settings });
  console.log(JSON.stringify(out, null, 1));
}
