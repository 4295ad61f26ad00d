import type { Command } from '../command.ts';
import { parseFlags, requireString } from '../args.ts';
import { readIndexManifest, verifyIndexFiles } from '../../retrieve/index-manifest.ts';
import { resolveIndexDir } from '../../retrieve/index-versions.ts';

const usage = `Usage: cuilink index info --index DIR|ROOT [--json] [--verify]

Prints an index directory's manifest (of an index root, the version its CURRENT names): version, KB checksum and counts, model id and checksum,
dimensions, HNSW parameters and build timings.

Options:
  --index DIR   index directory (cuilink index build) or index root
  --json        print the manifest as JSON
  --verify      first check every index file against the size and sha256 its manifest recorded at
                build, as a linker does when it opens the index (fails with BAD_INDEX naming a file
                that differs; an index built before checksums has nothing to check against)
  -h, --help    this text`;

export const indexInfo: Command = {
  name: 'index info',
  summary: 'Show an index directory manifest (versions, counts, build parameters)',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, { index: { type: 'string' }, json: { type: 'boolean', default: false }, verify: { type: 'boolean', default: false } });
    // An index root (CURRENT + versions) is shown as linkers open it: the version CURRENT names.
    const resolved = resolveIndexDir(requireString(values.index, 'index'));
    const manifest = readIndexManifest(resolved.dir);
    const verified = values.verify === true && verifyIndexFiles(resolved.dir, manifest);
    if (values.json) {
      console.log(JSON.stringify(manifest, null, 2));
      return 0;
    }
    const rows: [string, string][] = [
      ...(resolved.version === undefined ? [] : [['served version', `${resolved.version} (CURRENT)`] as [string, string]]),
      ['index version', manifest.indexVersion],
      ['created', manifest.createdAt],
      ['kb sources', manifest.kb.sources.join(', ')],
      ['kb checksum', manifest.kb.checksum],
      ['concepts', String(manifest.counts.concepts)],
      ['names (vectors)', String(manifest.counts.names)],
      ['exact keys', String(manifest.counts.exactKeys)],
      ['model', `${manifest.model.id} (${manifest.model.precision}, ${manifest.model.dims} dims)`],
      ['model sha256', manifest.model.sha256],
      ['hnsw', `M=${manifest.hnsw.m} efConstruction=${manifest.hnsw.efConstruction} efSearch=${manifest.hnsw.efSearch}`],
      ['build', `${manifest.timings.totalSeconds.toFixed(1)} s total, ${manifest.timings.namesPerSecond.toFixed(0)} names/s encoded`],
      ['file checksums', fileChecksumsRow(manifest.checksums !== undefined, verified)],
    ];
    const width = Math.max(...rows.map(([k]) => k.length));
    for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
    return 0;
  },
};

function fileChecksumsRow(recorded: boolean, verified: boolean): string {
  if (!recorded) return 'none (built before checksums: checked for shape only)';
  return verified ? 'recorded; every file matches them (--verify)' : 'recorded (checked when the index is opened; --verify checks them now)';
}
