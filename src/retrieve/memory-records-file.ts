import { readFileSync } from 'node:fs';
import { InputError } from '../kb/errors.ts';
import type { FileDigest } from '../kb/file-digest.ts';
import { parseJsonSafely } from '../kb/safe-json.ts';
import { checkFileChecksum } from './memory-consistency.ts';
import { parseMemoryRecord, type MemoryRecord } from './memory-record.ts';

/**
 * A memory version's records.jsonl, in file order, refused (BAD_MEMORY) when its bytes differ
 * from the checksum its manifest recorded, a line is no record of this memory's kind (`rawText`),
 * or a seq is at or past the manifest's `nextSeq` or comes twice.
 */
export function readMemoryRecords(file: string, recorded: FileDigest | undefined, nextSeq: number, rawText: boolean): MemoryRecord[] {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new InputError(`${file}: ${(error as Error).message}`, 'BAD_MEMORY', error);
  }
  checkFileChecksum(file, recorded, bytes);
  const text = bytes.toString('utf8');
  const records: MemoryRecord[] = [];
  const lineOfSeq = new Map<number, number>();
  let line = 0;
  for (const raw of text.split('\n')) {
    line++;
    if (raw.trim() === '') continue;
    // The records hold mention text: the parser's own message (and cause) would quote it.
    const json = parseJsonSafely(raw);
    if ('reason' in json) throw new InputError(`${file}:${line}: ${json.reason}`, 'BAD_MEMORY');
    const record = parseMemoryRecord(json.value, `${file}:${line}`, rawText);
    // The next label gets seq nextSeq: a record at or past it would be overwritten, prototype and all.
    if (record.seq >= nextSeq) throw new InputError(`${file}:${line}: seq ${record.seq} is not below the manifest's nextSeq ${nextSeq}`, 'BAD_MEMORY');
    const earlier = lineOfSeq.get(record.seq);
    if (earlier !== undefined) throw new InputError(`${file}:${line}: seq ${record.seq} again (line ${earlier} has it)`, 'BAD_MEMORY');
    lineOfSeq.set(record.seq, line);
    records.push(record);
  }
  return records;
}
