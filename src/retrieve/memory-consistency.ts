import { InputError } from '../kb/errors.ts';
import type { FileDigest } from '../kb/file-digest.ts';
import { checkRecordedDigest } from './manifest-files.ts';
import { readHnswLabels } from './hnsw-index.ts';

/**
 * Checks a version's file against the size and SHA-256 its manifest recorded when it was saved
 * (`content`: the bytes already read for parsing, so those are the bytes checked). No record:
 * a version from before checksums, checked for shape only.
 */
export function checkFileChecksum(file: string, recorded: FileDigest | undefined, content?: Uint8Array): void {
  const changed = 'the file changed after this version was saved (damage, a partial copy, or a file of another memory)';
  checkRecordedDigest(file, recorded, { code: 'BAD_MEMORY', changed }, { content });
}

/**
 * Checks a memory version's prototypes against its records and manifest. The writer adds one HNSW
 * point per label it learns (HNSW label = the record's seq, never reused, so the file holds exactly
 * the labels 0..nextSeq-1) and marks a retracted record's point deleted (live exactly where
 * records.jsonl has the seq). A prototypes file copied from another version breaks this: records
 * without a prototype are never found by the dense search, and live points without a record take
 * neighbour slots that come back empty.
 */
export function checkPrototypes(file: string, nextSeq: number, liveSeqs: { has(seq: number): boolean }): void {
  const points = readHnswLabels(file);
  const fromElsewhere = 'the file belongs to another version or memory';
  if (points.size !== nextSeq) throw new InputError(`${file}: ${points.size} prototypes, manifest nextSeq ${nextSeq} (one a label ever added): ${fromElsewhere}`, 'BAD_MEMORY');
  for (const [seq, deleted] of points) {
    if (seq >= nextSeq) throw new InputError(`${file}: a prototype labelled ${seq}, not below the manifest's nextSeq ${nextSeq}: ${fromElsewhere}`, 'BAD_MEMORY');
    const live = liveSeqs.has(seq);
    if (live && deleted) throw new InputError(`${file}: the prototype of seq ${seq} is deleted, yet records.jsonl holds that record: ${fromElsewhere}`, 'BAD_MEMORY');
    if (!live && !deleted) throw new InputError(`${file}: the prototype of seq ${seq} is live, yet no record has that seq (retracted): ${fromElsewhere}`, 'BAD_MEMORY');
  }
}
