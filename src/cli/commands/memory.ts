import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag, parseTypesFlag, requireString } from '../args.ts';
import { ENCODER_FLAG_OPTIONS, ENCODER_FLAGS_HELP, encoderRequest } from '../encoder-flags.ts';
import { InputError } from '../../kb/errors.ts';
import { BiEncoder } from '../../encode/bi-encoder.ts';
import { normalizeName } from '../../text/normalize.ts';
import { readIndexManifest } from '../../retrieve/index-manifest.ts';
import { resolveIndexDir } from '../../retrieve/index-versions.ts';
import { MemoryStore } from '../../retrieve/memory-store.ts';
import { resolveMemoryDir } from '../../retrieve/memory-root.ts';
import { DEFAULT_MODEL_DIR } from '../../link/default-index.ts';
import { MemoryLearner, publishMemory, type LabelledMention } from '../../link/memory-learner.ts';
import { kbOntologyView, loadIndexKb } from '../../eval/kb-ontology-view.ts';
import { labelledMentionsFromJsonl, labelledMentionsFromPubTator } from '../../eval/memory-sources.ts';
import { TUNING_SPLIT_SEED, parseSplitPart } from '../../eval/tuning-split.ts';
import { writeOutput } from '../output-files.ts';

const addUsage = `Usage: cuilink memory add --memory ROOT (--corpus FILE.PubTator | --jsonl FILE) [options]

Adds labelled mentions to the memory at ROOT (created when missing): each becomes a count in the
exact-surface table and a prototype (its bi-encoder query vector) in the memory's HNSW graph. A new
version directory is written beside the old ones and ROOT/CURRENT flipped to it; running linkers
with --memory ROOT pick it up without a restart.

Options:
  --memory ROOT          memory root (version directories + CURRENT)
  --corpus FILE          PubTator corpus: every annotation with its gold ids (composites keep all ids;
                         a label naming more than 64 ids, which the updater refuses, refuses it)
  --split tune|learn     with --corpus: only that part of the fixed tuning split (src/eval/tuning-split.ts)
  --split-seed N         seed of the split (default ${TUNING_SPLIT_SEED})
  --types REGEX          with --corpus: only annotations whose type matches
  --jsonl FILE           gold JSONL: {"text", "label", "ids": [..] | "conceptId", "context"?, "source"?, "time"?}
  --index DIR            take the bi-encoder from this index's manifest (the one the linker uses) and
                         refuse a label whose concept id its KB lacks
  --outside-kb           keep labels of ids the index's KB lacks (local codes; memory.outsideKb links them)
  --model DIR            bi-encoder directory (default: the index's, else ${DEFAULT_MODEL_DIR})
  --no-raw-text          a new memory keeps no mention text, context or note id: only keyed hashes
                         (HMAC-SHA256, the memory's own salt) of the normalized surface and note id,
                         the ids and the vectors (docs/memory.md). An existing memory keeps its mode;
                         --no-raw-text on one that keeps raw text is refused
${ENCODER_FLAGS_HELP}
  -h, --help             this text`;

async function openEncoder(values: { index?: string; model?: string; provider?: string; 'device-id'?: string; threads?: string; precision?: string }): Promise<BiEncoder> {
  const modelDir = values.model ?? (values.index !== undefined ? readIndexManifest(resolveIndexDir(values.index).dir).model.path : DEFAULT_MODEL_DIR);
  return BiEncoder.open(modelDir, encoderRequest(values));
}

export const memoryAdd: Command = {
  name: 'memory add',
  summary: 'Add labelled mentions (PubTator corpus or gold JSONL) to a memory as a new version',
  usage: addUsage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      ...ENCODER_FLAG_OPTIONS,
      memory: { type: 'string' },
      corpus: { type: 'string' },
      jsonl: { type: 'string' },
      split: { type: 'string' },
      'split-seed': { type: 'string' },
      types: { type: 'string' },
      index: { type: 'string' },
      model: { type: 'string' },
      'outside-kb': { type: 'boolean', default: false },
      'no-raw-text': { type: 'boolean', default: false },
    });
    const root = requireString(values.memory, 'memory');
    if ((values.corpus === undefined) === (values.jsonl === undefined)) throw new InputError('give exactly one of --corpus or --jsonl', 'BAD_FLAGS');
    const corpusOnly = (['split', 'split-seed', 'types'] as const).find((flag) => values[flag] !== undefined);
    if (values.jsonl !== undefined && corpusOnly !== undefined) throw new InputError(`--${corpusOnly}: only with --corpus (it selects from a PubTator corpus; a --jsonl file is added whole)`, 'BAD_FLAGS');
    const split = parseSplitPart(values.split);
    if (split === undefined && values['split-seed'] !== undefined) throw new InputError('--split-seed: only with --split tune|learn', 'BAD_FLAGS');
    const splitSeed = parseNumberFlag(values['split-seed'], 'split-seed', TUNING_SPLIT_SEED, { integer: true });
    const mentions = values.corpus !== undefined ? await labelledMentionsFromPubTator(values.corpus, { split, splitSeed, types: parseTypesFlag(values.types) }) : labelledMentionsFromJsonl(values.jsonl!);
    if (values.index !== undefined && !values['outside-kb']) await refuseUnknownIds(mentions, values.index);
    if (values.index === undefined) process.stderr.write('memory add: concept ids not checked against a KB (give --index, the linker\'s index)\n');
    const encoder = await openEncoder(values);
    try {
      const learner = new MemoryLearner(encoder);
      const store = learner.openOrCreate(root, values['no-raw-text'] ? { rawText: false } : {});
      if (!store.rawText && !values['no-raw-text']) process.stderr.write(`memory add: ${root} keeps no raw text (manifest rawText false): these labels are kept as hashes too\n`);
      const started = performance.now();
      await learner.add(store, mentions);
      const version = publishMemory(store, root);
      const seconds = (performance.now() - started) / 1000;
      console.log(`memory ${root}: +${mentions.length} labelled mentions in ${seconds.toFixed(1)} s (${(mentions.length / Math.max(seconds, 1e-9)).toFixed(0)}/s); ${store.size} records, ${store.surfaceCount} surfaces; CURRENT = ${version}`);
    } finally {
      await encoder.close();
    }
    return 0;
  },
};

export const memoryInfo: Command = {
  name: 'memory info',
  summary: 'Show a memory version: records, surfaces, concepts, model, parent',
  usage: `Usage: cuilink memory info --memory ROOT|DIR [--json]

Prints the manifest of the memory version ROOT/CURRENT names (or of a version directory): version,
parent, record/surface/concept counts, model, whether it keeps raw text, and records per source.
No mention text. Opening the version checks its files against the sizes and SHA-256 checksums its
manifest recorded (a mismatch is refused, BAD_MEMORY, naming the file).`,
  async run(argv) {
    const { values } = parseFlags(argv, { memory: { type: 'string' }, json: { type: 'boolean', default: false } });
    const { dir } = resolveMemoryDir(requireString(values.memory, 'memory'));
    const store = MemoryStore.open(dir, normalizeName);
    const manifest = store.manifest!;
    const bySource = new Map<string, number>();
    for (const r of store.list()) bySource.set(r.source, (bySource.get(r.source) ?? 0) + 1);
    if (values.json) {
      console.log(JSON.stringify({ ...manifest, dir, sources: Object.fromEntries(bySource) }, null, 2));
      return 0;
    }
    const rows: [string, string][] = [
      ['memory version', manifest.memoryVersion],
      ['parent', manifest.parent ?? '(none)'],
      ['created', manifest.createdAt],
      ['records', String(manifest.counts.records)],
      ['surfaces', String(manifest.counts.surfaces)],
      ['concepts', String(manifest.counts.concepts)],
      ['model', `${manifest.model.id} (${manifest.model.dims} dims, sha256 ${manifest.model.sha256.slice(0, 12)})`],
      ['checksums', manifest.checksums ? 'records and prototypes match the manifest' : 'none recorded (saved before checksums: files checked for shape only)'],
      ['raw text', manifest.rawText ? 'yes (records hold mention text, context, note ids)' : 'no (keyed hashes of surfaces and note ids only)'],
      ['sources', [...bySource].map(([s, n]) => `${s}: ${n}`).join(', ') || '(none)'],
    ];
    const width = Math.max(...rows.map(([k]) => k.length));
    for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
    return 0;
  },
};

export const memoryExport: Command = {
  name: 'memory export',
  summary: 'Write a memory\'s labelled mentions as JSONL (seq, text, label, ids, source, time)',
  usage: `Usage: cuilink memory export --memory ROOT|DIR [--out FILE|-]

Writes every live record (one JSON line each, oldest first) to FILE or stdout ('-', the default).
The lines hold mention text: treat the file like the notes. 'cuilink memory remove --seq N'
retracts one.
A memory without raw text (memory add --no-raw-text) exports what it holds: seq, label, ids,
source, time, mentionId and the surface and note hashes; no text, so 'memory add --jsonl' cannot
take such a file back (rebuild from the labels' sources instead).`,
  async run(argv) {
    const { values } = parseFlags(argv, { memory: { type: 'string' }, out: { type: 'string' } });
    const store = MemoryStore.open(resolveMemoryDir(requireString(values.memory, 'memory')).dir, normalizeName);
    if (!store.rawText) process.stderr.write('memory export: this memory keeps no raw text: the lines hold surface and note hashes, not text (not re-addable with memory add --jsonl)\n');
    const body = store.list().map((r) => JSON.stringify(r)).join('\n');
    if (values.out === undefined || values.out === '-') process.stdout.write(body === '' ? '' : `${body}\n`);
    else {
      writeOutput(values.out, body === '' ? '' : `${body}\n`, 'out');
    }
    return 0;
  },
};

export const memoryRemove: Command = {
  name: 'memory remove',
  summary: 'Retract labels from a memory (by seq, surface + concept, or source) as a new version',
  usage: `Usage: cuilink memory remove --memory ROOT (--seq N[,N…] | --surface TEXT [--concept ID] | --source S)

Retracts matching records: they leave the surface table and their prototypes leave every search.
--surface matches the normalized text (in a memory without raw text, its keyed hash).
Writes a new version and flips ROOT/CURRENT (running linkers swap); the old version stays on disk
for rollback (\`echo <version> > ROOT/CURRENT\`).`,
  async run(argv) {
    const { values } = parseFlags(argv, { memory: { type: 'string' }, seq: { type: 'string' }, surface: { type: 'string' }, concept: { type: 'string' }, source: { type: 'string' } });
    const root = requireString(values.memory, 'memory');
    // --concept narrows a --surface match only; beside --seq or --source it would be ignored.
    if (values.concept !== undefined && values.surface === undefined) throw new InputError('--concept: only with --surface TEXT', 'BAD_FLAGS');
    const resolved = resolveMemoryDir(root);
    if (resolved.root === undefined) throw new InputError(`${root}: remove needs a memory root (with CURRENT), not a version directory`, 'BAD_FLAGS');
    const store = MemoryStore.open(resolved.dir, normalizeName);
    const seqs = new Set(values.seq === undefined ? [] : values.seq.split(',').map((s) => parseNumberFlag(s, 'seq', 0, { min: 0, integer: true })));
    if (seqs.size === 0 && values.surface === undefined && values.source === undefined) throw new InputError('give --seq, --surface or --source', 'BAD_FLAGS');
    // By surface key: normalized text, or its keyed hash in a memory without raw text.
    const surface = values.surface === undefined ? undefined : store.surfaceKey(values.surface);
    const matches = store.list().filter((r) => seqs.has(r.seq) || (surface !== undefined && store.recordSurfaceKey(r) === surface && (values.concept === undefined || r.ids.includes(values.concept))) || (values.source !== undefined && r.source === values.source));
    const removed = store.remove(matches.map((r) => r.seq));
    if (removed.length === 0) {
      console.log('no matching records; memory unchanged');
      return 1;
    }
    const version = publishMemory(store, root);
    console.log(`removed ${removed.length} record(s) (seq ${removed.map((r) => r.seq).join(', ')}); ${store.size} left; CURRENT = ${version}`);
    return 0;
  },
};

/** A label naming an id the linker's KB lacks (a typo, another vocabulary) would never be a link: refused, unless asked for. */
async function refuseUnknownIds(mentions: readonly LabelledMention[], index: string): Promise<void> {
  const view = kbOntologyView(await loadIndexKb(index));
  const unknown = new Map<string, number>();
  for (const m of mentions) for (const id of m.record.ids) if (view.resolve(id) === undefined) unknown.set(id, (unknown.get(id) ?? 0) + 1);
  if (unknown.size === 0) return;
  const [first] = unknown.keys();
  const labels = [...unknown.values()].reduce((a, b) => a + b, 0);
  throw new InputError(`concept id ${first} is not in the KB of --index ${index}${unknown.size > 1 ? ` (nor ${unknown.size - 1} other id(s); ${labels} labels in all)` : ''}: fix the labels, or keep them with --outside-kb`, 'BAD_MEMORY');
}
