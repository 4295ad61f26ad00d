import type { Command } from '../command.ts';
import { parseFlags, requireString } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import { activateIndexVersion, listIndexVersions, readCurrentVersion } from '../../retrieve/index-versions.ts';

const usage = `Usage: cuilink index activate --root DIR --version NAME
       cuilink index activate --root DIR --list

An index root holds complete index versions side by side (ROOT/NAME, each written by
\`cuilink index build --out ROOT/NAME\`) and a CURRENT file naming the one linkers open when
given --index ROOT. Activating checks the version is complete and that its files match the sizes
and sha256 its manifest recorded at build (BAD_INDEX naming a file that differs; CURRENT then stays
as it was), and rewrites CURRENT atomically;
running linkers keep their loaded version until they restart (a rolling restart rolls it out,
activating the previous version rolls it back). deploy/README.md has the whole procedure.

Options:
  --root DIR       index root
  --version NAME   version directory to serve from now on
  --list           list the complete versions, oldest first, marking CURRENT
  -h, --help       this text`;

export const indexActivate: Command = {
  name: 'index activate',
  summary: 'Point an index root at one of its versions (rollout and rollback of a KB or model)',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, { root: { type: 'string' }, version: { type: 'string' }, list: { type: 'boolean', default: false } });
    const root = requireString(values.root, 'root');
    if (values.list) {
      if (values.version !== undefined) throw new InputError('give --list or --version NAME, not both', 'BAD_FLAGS');
      const current = readCurrentVersion(root);
      for (const v of listIndexVersions(root)) {
        console.log(`${v.name === current ? '*' : ' '} ${v.name}\t${v.manifest.indexVersion}\t${v.manifest.createdAt}\t${v.manifest.counts.concepts} concepts\t${v.manifest.model.id}`);
      }
      return 0;
    }
    const version = requireString(values.version, 'version');
    const previous = readCurrentVersion(root);
    const target = activateIndexVersion(root, version);
    const files = target.verified ? 'files match their checksums' : 'no file checksums to check: built before they were recorded';
    console.error(`index activate: ${root} now serves ${target.name} (index ${target.manifest.indexVersion}; ${files}); was ${previous ?? 'unset'}`);
    return 0;
  },
};
