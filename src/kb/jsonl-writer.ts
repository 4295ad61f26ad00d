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
  let count = 0;
  let batch = '';
  for (const concept of concepts) {
    batch += conceptToJsonLine(concept) + '\n';
    count += 1;
    // Batching ~64 KiB per write keeps syscall and callback overhead low.
    if (batch.length >= 65536) {
      if (!out.write(batch)) await once(out, 'drain');
      batch = '';
    }
  }
  if (batch.length > 0 && !out.write(batch)) await once(out, 'drain');
  return count;
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
