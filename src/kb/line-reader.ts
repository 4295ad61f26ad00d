import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { InputError } from './errors.ts';

/**
 * Opens a data file as a text stream, gunzipping when the file starts with the gzip magic bytes
 * (the `.gz` suffix alone is not trusted: files get renamed and decompressed in place).
 * A missing or unreadable file is an InputError with a one-line reason.
 */
export async function openText(path: string): Promise<Readable> {
  let gzipped = false;
  try {
    const handle = await open(path, 'r');
    try {
      const magic = Buffer.alloc(2);
      const { bytesRead } = await handle.read(magic, 0, 2, 0);
      gzipped = bytesRead === 2 && magic[0] === 0x1f && magic[1] === 0x8b;
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw new InputError(`cannot read ${path}: ${describeFsError(error)}`, 'INPUT_NOT_FOUND', error);
  }
  const raw = createReadStream(path, { highWaterMark: 1 << 20 });
  if (!gzipped) return raw;
  const gunzip = createGunzip({ chunkSize: 1 << 18 });
  raw.on('error', (error) => gunzip.destroy(error));
  return raw.pipe(gunzip);
}

/**
 * Yields the lines of a (possibly gzipped) file with their 1-based numbers, so parsers can name
 * the line in a ParseError. The `line` object is reused between iterations to avoid per-row churn
 * on multi-million-line files: copy fields out, never keep the object.
 */
export async function* readLines(path: string): AsyncGenerator<{ text: string; number: number }> {
  const input = await openText(path);
  const reader = createInterface({ input, crlfDelay: Infinity });
  // readline only sees input errors (a truncated gzip) if they are forwarded to it.
  let failure: unknown;
  input.on('error', (error) => {
    failure = error;
    reader.close();
  });
  const line = { text: '', number: 0 };
  try {
    for await (const text of reader) {
      line.number += 1;
      // Editors on Windows prefix a BOM; it would make the first JSON line or OBO tag unparsable.
      line.text = line.number === 1 && text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
      yield line;
    }
  } catch (error) {
    // Only the input can throw here (the consumer's own errors never enter this generator).
    failure = error;
  } finally {
    reader.close();
    input.destroy();
  }
  if (failure !== undefined) {
    throw new InputError(`cannot read ${path} after line ${line.number}: ${(failure as Error).message}`, 'INPUT_CORRUPT', failure);
  }
}

/** Reads a whole (possibly gzipped) file into a string; for single-document formats (OBO-Graph JSON). */
export async function readWholeText(path: string): Promise<string> {
  const input = await openText(path);
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of input) chunks.push(chunk as Buffer);
  } catch (error) {
    throw new InputError(`cannot read ${path}: ${(error as Error).message}`, 'INPUT_CORRUPT', error);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  // As in readLines: a BOM left in front would make JSON.parse reject the document's first byte.
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** The first `max` lines of a file (decompressed), for format sniffing. */
export async function headLines(path: string, max: number): Promise<string[]> {
  const out: string[] = [];
  for await (const line of readLines(path)) {
    out.push(line.text.length > 4096 ? line.text.slice(0, 4096) : line.text);
    if (out.length >= max) break;
  }
  return out;
}

function describeFsError(error: unknown): string {
  const code = (error as { code?: string }).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES') return 'permission denied';
  if (code === 'EISDIR') return 'is a directory';
  return (error as Error).message;
}
