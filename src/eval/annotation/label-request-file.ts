import { readLines } from '../../kb/line-reader.ts';
import type { LabelRequestRecord } from '../../stream/avro/avro-records.ts';
import { parseLabelRequest } from './label-request-line.ts';
import { parseJsonSafely } from '../../kb/safe-json.ts';

/** A request and where it was read (`line 12`, `TOPIC partition 0 offset 41`), for the reports. */
export interface SourcedRequest {
  request: LabelRequestRecord;
  where: string;
}

/** An input item refused with its reason; reasons name ids and offsets, never note text. */
export interface Refusal {
  where: string;
  reason: string;
}

export interface RequestBatch {
  requests: SourcedRequest[];
  refused: Refusal[];
}

/** LabelRequest JSON lines; a bad line is refused with its number, the others are kept. */
export async function readLabelRequestFile(file: string): Promise<RequestBatch> {
  const batch: RequestBatch = { requests: [], refused: [] };
  for await (const { text, number } of readLines(file)) {
    if (text.trim() === '') continue;
    const where = `line ${number}`;
    const json = parseJsonSafely(text);
    if ('reason' in json) {
      batch.refused.push({ where, reason: json.reason });
      continue;
    }
    const parsed = parseLabelRequest(json.value);
    if ('reason' in parsed) batch.refused.push({ where, reason: parsed.reason });
    else batch.requests.push({ request: parsed.request, where });
  }
  return batch;
}
