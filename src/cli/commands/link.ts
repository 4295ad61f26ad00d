import { closeSync, createReadStream, createWriteStream, fstatSync, openSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag } from '../args.ts';
import { LINKER_FLAG_OPTIONS, LINKER_FLAGS_HELP, linkerRequest, requireMemory } from '../linker-flags.ts';
import { openReplacement, refuseClobbering, type Replacement } from '../output-files.ts';
import { InputError } from '../../kb/errors.ts';
import { openLinker } from '../../link/open-linker.ts';
import { ensureDefaultIndex } from '../../link/default-index.ts';
import { validateNote } from '../../link/validate-note.ts';
import { parseJsonSafely } from '../../kb/safe-json.ts';
import type { NoteInput } from '../../link/types.ts';

const usage = `Usage: cuilink link [--index DIR] [--in FILE|-] [--out FILE|-] [options]

Links note events given as JSON lines — {"noteId", "text", "mentions": [{"id", "start", "end",
"text", "label"}], ...}, the NoteEvent shape the Kafka stage carries — and writes one LinkedNote
JSON line per note, in input order. A line that is not a valid note event is reported on stderr
with its line number and skipped; the exit code is then 3.

Options:
  --index DIR           index directory (default: the default HPO index, built once and cached)
  --in FILE|-           input JSON lines (default '-', stdin)
  --out FILE|-          output JSON lines (default '-', stdout)
  --batch N             notes per linking call (default 32)
${LINKER_FLAGS_HELP}
  -h, --help            this text`;

async function write(out: Writable, text: string): Promise<void> {
  // A stream that failed is destroyed: it will not drain, and once() rejects on its error.
  if (out.destroyed) throw new Error('output closed');
  if (!out.write(text)) await once(out, 'drain');
}

/** Opens `--in` now, or a one-line InputError naming the flag. */
function openInput(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    throw new InputError(`--in ${path}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`, 'BAD_FLAGS', error);
  }
  if (fstatSync(fd).isDirectory()) {
    closeSync(fd);
    throw new InputError(`--in ${path}: a directory, not a file`, 'BAD_FLAGS');
  }
  return fd;
}

export const link: Command = {
  name: 'link',
  summary: 'Link note events (JSON lines) to concepts; LinkedNote JSON lines out',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      ...LINKER_FLAG_OPTIONS,
      in: { type: 'string', default: '-' },
      out: { type: 'string', default: '-' },
      batch: { type: 'string' },
    });
    const batchSize = parseNumberFlag(values.batch, 'batch', 32, { min: 1, max: 10_000, integer: true });
    const request = linkerRequest(values);
    requireMemory(values);
    refuseClobbering([['out', values.out]], [['in', values.in]]);
    // Both files are opened before the models load: a typo is a one-line error at once, not a
    // failure minutes later (an input stream that failed to open while they loaded never ended).
    const input = values.in === '-' ? process.stdin : createReadStream('', { fd: openInput(values.in) });
    // --out is written beside itself and renamed over it at the end: a run that fails (a bad
    // --index, a crash part way) leaves the previous output whole instead of empty or cut.
    let replacement: Replacement | undefined;
    try {
      replacement = values.out === '-' ? undefined : openReplacement(values.out, 'out');
    } catch (error) {
      if (input !== process.stdin) input.destroy();
      throw error;
    }
    const out = replacement === undefined ? process.stdout : createWriteStream('', { fd: replacement.fd });
    let writeError: Error | undefined;
    out.on('error', (error) => (writeError ??= error));
    const failIfUnwritable = () => {
      if (writeError !== undefined) throw new InputError(`cannot write ${values.out}: ${writeError.message}`, 'OUTPUT_ERROR', writeError);
    };
    let bad = 0;
    let notes = 0;
    let mentions = 0;
    let started = 0;
    try {
      const indexDir = request.indexDir ?? (await ensureDefaultIndex({ log: (line) => console.error(`link: ${line}`) }));
      const core = await openLinker({ ...request, indexDir });
      started = performance.now();
      try {
        let batch: NoteInput[] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          const linked = await core.linkNotes(batch);
          for (const note of linked) await write(out, `${JSON.stringify(note)}\n`);
          batch = [];
        };
        let lineNo = 0;
        try {
          for await (const read of createInterface({ input, crlfDelay: Infinity })) {
            lineNo++;
            // Editors on Windows prefix a BOM; the other readers drop it too (src/kb/line-reader.ts).
            const line = lineNo === 1 && read.charCodeAt(0) === 0xfeff ? read.slice(1) : read;
            if (line.trim() === '') continue;
            try {
              // The reason never quotes the line: it is note text.
              const parsed = parseJsonSafely(line);
              if ('reason' in parsed) throw new InputError(parsed.reason, 'BAD_INPUT');
              const note = validateNote(parsed.value);
              batch.push(note);
              notes++;
              mentions += note.mentions.length;
            } catch (error) {
              bad++;
              console.error(`link: ${values.in === '-' ? 'stdin' : values.in}:${lineNo}: ${(error as Error).message}`);
              continue;
            }
            if (batch.length >= batchSize) await flush();
          }
        } catch (error) {
          failIfUnwritable();
          throw new InputError(`cannot read ${values.in}: ${(error as Error).message}`, 'BAD_INPUT', error);
        }
        await flush();
      } finally {
        await core.close();
        if (out !== process.stdout) await new Promise<void>((resolve) => (out as Writable).end(resolve));
      }
      failIfUnwritable();
      replacement?.commit();
    } finally {
      if (out !== process.stdout && !out.closed) out.destroy();
      if (input !== process.stdin) input.destroy();
      replacement?.discard();
    }
    const seconds = (performance.now() - started) / 1000;
    console.error(`link: ${notes} notes, ${mentions} mentions in ${seconds.toFixed(2)} s (${(mentions / seconds).toFixed(1)} mentions/s)${bad > 0 ? `; ${bad} invalid line(s) skipped` : ''}`);
    return bad > 0 ? 3 : 0;
  },
};
