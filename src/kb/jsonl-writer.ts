import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { Concept } from './concept.ts';
import { InputError } from './errors.ts';
import { conceptToJsonLine } from './jsonl-format.ts';

/**
 * Writes concepts as canonical JSONL to a stream, honouring backpressure (a 4M-concept UMLS
 * export must not buffer gigabytes in the stream). Does not end the stream.
 */
export async function writeConceptJsonl(concepts: Iterable<Concept>, out: Writable): Promise<number> {
  // Listen for errors while writing (EPIPE when a reader such as `head` goes away) so they
  // reach the caller instead of crashing the process as an unhandled 'error' event.
  let failure: Error | undefined;
  const onError = (error: Error) => {
    failure ??= error;
  };
  out.on('error', onError);
  try {
    let count = 0;
    let batch = '';
    for (const concept of concepts) {
      batch += conceptToJsonLine(concept) + '\n';
      count += 1;
      // Batching ~64 KiB per write keeps syscall and callback overhead low.
      if (batch.length >= 65536) {
        await write(out, batch, () => failure);
        batch = '';
      }
    }
    if (batch.length > 0) await write(out, batch, () => failure);
    return count;
  } finally {
    out.off('error', onError);
  }
}

async function write(out: Writable, chunk: string, failed: () => Error | undefined): Promise<void> {
  const before = failed();
  if (before) throw before;
  if (!out.write(chunk)) await once(out, 'drain');
  const after = failed();
  if (after) throw after;
}

/** Writes concepts to a file (created or truncated); resolves once the file is flushed and closed. */
export async function writeConceptJsonlFile(concepts: Iterable<Concept>, path: string): Promise<number> {
  const out = createWriteStream(path);
  const failed = new Promise<never>((_, reject) => {
    out.once('error', (error) => reject(new InputError(`cannot write ${path}: ${error.message}`, 'OUTPUT_FAILED', error)));
  });
  const work = (async () => {
    const count = await writeConceptJsonl(concepts, out);
    out.end();
    await once(out, 'finish');
    return count;
  })();
  return Promise.race([work, failed]);
}
