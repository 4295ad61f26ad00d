import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag, requireString } from '../args.ts';
import { KB_FLAG_OPTIONS, KB_FLAGS_HELP, KB_FORMATS_HELP, kbLoadRequest } from '../kb-flags.ts';
import { ENCODER_FLAG_OPTIONS, ENCODER_FLAGS_HELP, encoderRequest } from '../encoder-flags.ts';
import { buildIndexFromKb } from '../../link/build-index-from-kb.ts';
import { DEFAULT_MODEL_DIR } from '../../link/default-index.ts';
import { DEFAULT_HNSW_PARAMS } from '../../retrieve/hnsw-index.ts';

const usage = `Usage: cuilink index build --kb FILE [--kb FILE ...] --out DIR [options]

Loads the KB, encodes every name of every concept with the bi-encoder, and writes a versioned
index directory: concepts, HNSW graph, name table and a manifest (KB checksum, model id and
checksum, dims, counts, build parameters and timings). Written under a temporary name and
renamed when complete.

${KB_FORMATS_HELP}

Options:
${KB_FLAGS_HELP}
  --out DIR             index directory to write
  --model DIR           bi-encoder model directory (default ${DEFAULT_MODEL_DIR})
${ENCODER_FLAGS_HELP}
  --m N                 HNSW graph degree (default ${DEFAULT_HNSW_PARAMS.m})
  --ef-construction N   HNSW build breadth (default ${DEFAULT_HNSW_PARAMS.efConstruction})
  --ef-search N         default search breadth stored in the manifest (default ${DEFAULT_HNSW_PARAMS.efSearch})
  --force               replace DIR if it exists
  --sole-builder        no other process on any host builds DIR meanwhile (the k8s index-build
                        Job: one pod at a time): staging directories other hosts left
                        (DIR.building-*, a killed pod's) are removed too, not only this host's;
                        so are old indexes a killed --force build moved aside (DIR.replaced-*),
                        once DIR holds an index
  --no-progress         no progress bar
  -h, --help            this text`;

export const indexBuild: Command = {
  name: 'index build',
  summary: 'Encode every KB name and build a versioned HNSW + exact-name index directory',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      ...KB_FLAG_OPTIONS,
      ...ENCODER_FLAG_OPTIONS,
      out: { type: 'string' },
      model: { type: 'string' },
      m: { type: 'string' },
      'ef-construction': { type: 'string' },
      'ef-search': { type: 'string' },
      force: { type: 'boolean', default: false },
      'sole-builder': { type: 'boolean', default: false },
      'no-progress': { type: 'boolean', default: false },
    });
    const { paths, options } = kbLoadRequest(values);
    const outDir = requireString(values.out, 'out');
    const hnsw = {
      m: parseNumberFlag(values.m, 'm', DEFAULT_HNSW_PARAMS.m, { min: 2, max: 128, integer: true }),
      efConstruction: parseNumberFlag(values['ef-construction'], 'ef-construction', DEFAULT_HNSW_PARAMS.efConstruction, { min: 8, max: 5000, integer: true }),
      efSearch: parseNumberFlag(values['ef-search'], 'ef-search', DEFAULT_HNSW_PARAMS.efSearch, { min: 1, max: 10000, integer: true }),
    };
    const manifest = await buildIndexFromKb({
      kbPaths: paths,
      kbOptions: options,
      modelDir: values.model ?? DEFAULT_MODEL_DIR,
      outDir,
      ...encoderRequest(values),
      hnsw,
      overwrite: values.force,
      soleBuilder: values['sole-builder'],
      progress: !values['no-progress'],
      log: (line) => console.error(`index build: ${line}`),
    });
    console.error(`index build: ${manifest.counts.concepts} concepts, ${manifest.counts.names} names → ${outDir} in ${manifest.timings.totalSeconds.toFixed(1)} s (${manifest.timings.namesPerSecond.toFixed(0)} names/s encoded)`);
    return 0;
  },
};
