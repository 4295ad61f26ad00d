import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseLinkConfig } from '../../src/link/link-config.ts';

/**
 * The figures README.md and models/default/MODEL_CARD.md quote, rendered from the committed result
 * files they come from. Each region sits between `<!-- figures:NAME -->` and `<!-- /figures -->`;
 * `npm run figures` rewrites them, and test/unit/figures.test.ts fails when a committed document
 * differs from what its result files give (a figure edited by hand, or a result file refreshed
 * without re-running the script).
 */
export interface FigureRegion {
  name: string;
  /** Document the region lives in, repository-relative. */
  file: string;
  /** Result files it reads, repository-relative (named in the generated text). */
  sources: string[];
  render(read: (file: string) => unknown): string;
}

interface LinkSystem {
  system: string;
  acc1: number;
  acc5: number;
  mrr: number;
  mentionsPerSecond: number;
}

interface FirstPassResult {
  name: string;
  medianMentionsPerSecond: number;
  medianWorstCaseMentionsPerSecond: number;
  hitRatio: number;
  devAcc1: number;
  devAcc5: number;
  top1DiffersFromUncached: number;
}

interface LinkBench {
  kb: string;
  kbSupplements?: string[];
  kbXrefNames?: string[];
  firstPass?: { stream: { mentions: number; distinctMentions: number }; rounds: number; results: FirstPassResult[] };
  systems: LinkSystem[];
  index: { names: number; buildSeconds: number; recallAt10VsExact: number };
  peakRssBytesWhileLinking: number;
  rssAfter: Record<string, number>;
}

interface Score {
  'acc@1': number;
  'acc@5': number;
}

interface CrossEncoderMetrics {
  withBiEncoder: Score;
  byWeight: Record<string, Score>;
  chosenRerank: { policy: string; candidates: number; margin: number; weight: number };
}

const f3 = (x: number): string => x.toFixed(3);
const mib = (bytes: number): string => `${Math.round(bytes / 2 ** 20)} MiB`;
const thousands = (n: number): string => n.toLocaleString('en-US');

/** The rerank defaults, from their one place (src/link/link-config.ts), as the tables name them. */
const RERANK = parseLinkConfig({}).rerank;
const RERANK_DEFAULTS = `top ${RERANK.candidates}, margin ${RERANK.margin}, weight ${RERANK.weight}`;

const README_ROWS: [string, string][] = [
  ['bi-encoder', 'cuilink, bi-encoder int8 + exact names + HNSW (`--reranker none`)'],
  ['bi-encoder + reranker (ambiguous)', `+ shipped cross-encoder on ambiguous mentions, ${RERANK_DEFAULTS} (**default**)`],
  ['bi-encoder + reranker (always)', '+ shipped cross-encoder on every non-exact mention (`rerank.policy: always`)'],
  ['lexical baseline (exact + char-3-gram TF-IDF)', 'lexical baseline (exact + char-3-gram TF-IDF)'],
];

function system(bench: LinkBench, name: string): LinkSystem {
  const found = bench.systems.find((s) => s.system === name);
  if (!found) throw new Error(`bench/results/link.json has no system '${name}'`);
  return found;
}

export const REGIONS: FigureRegion[] = [
  {
    name: 'readme-link-table',
    file: 'README.md',
    sources: ['bench/results/link.json'],
    render(read) {
      const bench = read('bench/results/link.json') as LinkBench;
      const rows = README_ROWS.map(([name, label]) => {
        const s = system(bench, name);
        return `| ${label} | ${f3(s.acc1)} | ${f3(s.acc5)} | ${f3(s.mrr)} | ${Math.round(s.mentionsPerSecond)} |`;
      });
      return ['| system | acc@1 | acc@5 | MRR | mentions/s |', '|---|---:|---:|---:|---:|', ...rows].join('\n');
    },
  },
  {
    name: 'readme-first-pass',
    file: 'README.md',
    sources: ['bench/results/link.json'],
    render(read) {
      const bench = read('bench/results/link.json') as LinkBench;
      const pass = bench.firstPass;
      if (!pass) throw new Error('bench/results/link.json has no firstPass (run npm run bench:link with the reranker)');
      const run = (name: string) => {
        const found = pass.results.find((r) => r.name === name);
        if (!found) throw new Error(`bench/results/link.json firstPass has no '${name}'`);
        return found;
      };
      const cold = run('uncached');
      const warm = run('cache + exact vectors (default)');
      return (
        `First pass over NCBI-disease train + dev (${thousands(pass.stream.mentions)} mentions, ${Math.round((1 - pass.stream.distinctMentions / pass.stream.mentions) * 100)}% repeats, ` +
        `cold cache; medians of ${pass.rounds} interleaved rounds): the default links **${thousands(Math.round(warm.medianMentionsPerSecond))} mentions/s** against ` +
        `${thousands(Math.round(cold.medianMentionsPerSecond))} uncached (${(warm.medianMentionsPerSecond / cold.medianMentionsPerSecond).toFixed(2)}×), ` +
        `${warm.top1DiffersFromUncached === 0 ? 'every top-1 link identical to the uncached one' : `${warm.top1DiffersFromUncached} top-1 links differing from the uncached ones`}; ` +
        `each distinct mention once (the worst case) ${thousands(Math.round(warm.medianWorstCaseMentionsPerSecond))} mentions/s (bench/results/link.json \`firstPass\`).`
      );
    },
  },
  {
    name: 'readme-index',
    file: 'README.md',
    sources: ['bench/results/link.json'],
    render(read) {
      const bench = read('bench/results/link.json') as LinkBench;
      const bi = bench.rssAfter['bi-encoder'];
      return (
        `MEDIC index build ${Math.round(bench.index.buildSeconds)} s (${thousands(bench.index.names)} names); HNSW recall@10 against exact search ` +
        `${f3(bench.index.recallAt10VsExact)}; peak RSS while linking ${mib(bench.peakRssBytesWhileLinking)} with both models loaded` +
        `${bi === undefined ? '' : ` (${mib(bi)} with the bi-encoder alone)`} (bench/results/link.json).`
      );
    },
  },
  {
    name: 'card-rerank-weights',
    file: 'models/default/MODEL_CARD.md',
    sources: ['models/default/crossencoder/manifest.json'],
    render(read) {
      const metrics = (read('models/default/crossencoder/manifest.json') as { metrics: CrossEncoderMetrics }).metrics;
      const chosen = metrics.chosenRerank;
      const weights = Object.keys(metrics.byWeight).sort((a, b) => Number(b) - Number(a));
      const rows = [
        `| none (bi-encoder alone) | ${f3(metrics.withBiEncoder['acc@1'])} | ${f3(metrics.withBiEncoder['acc@5'])} |`,
        ...weights.map((w) => `| ${chosen.policy}(margin ${chosen.margin}), top ${chosen.candidates}, weight ${Number(w).toFixed(1)}${Number(w) === chosen.weight ? ' (**chosen**)' : ''} | ${f3(metrics.byWeight[w]!['acc@1'])} | ${f3(metrics.byWeight[w]!['acc@5'])} |`),
      ];
      return ['| rerank setting | acc@1 | acc@5 |', '|---|---:|---:|', ...rows, '', '(models/default/crossencoder/manifest.json, `metrics.byWeight` and `metrics.chosenRerank`.)'].join('\n');
    },
  },
  {
    // The card once restated these by hand and kept an earlier tune grid's "margin 0.1, top 5"
    // after issue 15 re-chose top 3 / margin 0.05.
    name: 'card-rerank-defaults',
    file: 'models/default/MODEL_CARD.md',
    sources: ['src/link/link-config.ts'],
    render() {
      return (
        `Those defaults were re-derived on the tune split of NCBI-disease train with the linker's query fixes and sparse fusion on: ` +
        `${RERANK.policy} mentions, ${RERANK_DEFAULTS} (src/link/link-config.ts; bench/results/accuracy-tuning.json, docs/accuracy.md); ` +
        `the table above is the pipeline's own dev sweep, kept for the record.`
      );
    },
  },
  {
    name: 'card-cuilink-eval',
    file: 'models/default/MODEL_CARD.md',
    sources: ['bench/results/link.json'],
    render(read) {
      const bench = read('bench/results/link.json') as LinkBench;
      const rows: [string, string][] = [
        ['bi-encoder', 'shipped bi-encoder, no reranker (`--reranker none`)'],
        ['bi-encoder + reranker (ambiguous)', `shipped bi-encoder + shipped cross-encoder, linker defaults (ambiguous, ${RERANK_DEFAULTS})`],
        ['bi-encoder + reranker (always)', 'the same, reranking every non-exact mention (`rerank.policy: always`)'],
      ];
      return [
        '| system | acc@1 | acc@5 | MRR |',
        '|---|---:|---:|---:|',
        ...rows.map(([name, label]) => {
          const s = system(bench, name);
          return `| ${label} | ${f3(s.acc1)} | ${f3(s.acc5)} | ${f3(s.mrr)} |`;
        }),
        '',
        '(`npm run bench:link`, bench/results/link.json.)',
      ].join('\n');
    },
  },
];

const REGION = /<!-- figures:([a-z0-9-]+) -->\n([\s\S]*?)<!-- \/figures -->/g;

/** A document with every region re-rendered; throws on a region name the script does not know. */
export function renderDocument(text: string, file: string, read: (file: string) => unknown): string {
  return text.replace(REGION, (_whole, name: string) => {
    const region = REGIONS.find((r) => r.name === name && r.file === file);
    if (!region) throw new Error(`${file}: unknown figures region '${name}'`);
    return `<!-- figures:${name} -->\n${region.render(read)}\n<!-- /figures -->`;
  });
}

/** Region names present in a document. */
export function regionsIn(text: string): string[] {
  return [...text.matchAll(REGION)].map((m) => m[1]!);
}

export function readJsonFrom(root: string): (file: string) => unknown {
  return (file) => JSON.parse(readFileSync(join(root, file), 'utf8')) as unknown;
}
