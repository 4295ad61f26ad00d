import { readFileSync } from 'node:fs';
import { replaceFileDurably } from '../../kb/durable-file.ts';
import { InputError } from '../../kb/errors.ts';
import type { SidecarSnapshot } from './sidecar-evaluator.ts';
import { parseJsonSafely } from '../../kb/safe-json.ts';

/**
 * The evaluator's state file: written whole to a temporary name, flushed to the disk and renamed
 * over the old one, so a crash mid-write leaves the previous snapshot intact and a failed write
 * (disk full) leaves no half of it (pending gold and predictions hold mention text). Kafka offsets
 * are committed only after a snapshot is on disk (evaluator-service.ts): flushed, not just written,
 * or a power cut could keep the commit and lose the state it covers. The snapshot holds the offsets
 * it covers, so a restart skips what it re-reads below them even when that commit never happened.
 */
export function saveSnapshot(file: string, snapshot: SidecarSnapshot): void {
  try {
    // Owner only: pending gold and predictions hold mention text (PHI).
    replaceFileDurably(file, JSON.stringify(snapshot), { temporary: `${file}.tmp-${process.pid}`, mode: 0o600 });
  } catch (error) {
    throw new InputError(`cannot write evaluator state ${file}: ${(error as Error).message}`, 'STATE_WRITE_FAILED', error);
  }
}

/** The saved snapshot, or undefined on a first start (no file). */
export function loadSnapshot(file: string): SidecarSnapshot | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new InputError(`cannot read evaluator state ${file}: ${(error as Error).message}`, 'STATE_READ_FAILED', error);
  }
  // The snapshot holds pending predictions and gold with their text: the parser's message would quote it.
  const json = parseJsonSafely(text);
  if ('reason' in json) throw new InputError(`evaluator state ${file} is ${json.reason}; move it away to start with empty windows`, 'STATE_CORRUPT');
  const value = json.value as SidecarSnapshot;
  if (value?.version !== 1 || !Array.isArray(value.windows) || typeof value.joiner !== 'object' || value.joiner === null || (value.offsets !== undefined && !Array.isArray(value.offsets)) || (value.timeWindow !== undefined && !Array.isArray(value.timeWindow))) {
    throw new InputError(`evaluator state ${file} is not a version-1 snapshot; move it away to start with empty windows`, 'STATE_CORRUPT');
  }
  return value;
}
