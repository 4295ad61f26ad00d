import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { readLines } from '../kb/line-reader.ts';
import { InputError, ParseError } from '../kb/errors.ts';
import type { ScoredMention } from './metrics/mention-record.ts';
import { parseJsonSafely } from '../kb/safe-json.ts';

/** What error analysis wants beside a scored record, without a join: the mention text and concept names. */
export interface PredictionContext {
  /** The mention as the corpus wrote it (an operator's own offline file; the stream never writes text). */
  text?: string;
  /** Names of the gold concepts in the KB (null for a gold id the KB lacks: a gold NIL). */
  goldNames?: (string | null)[];
  /** Names of the predicted concepts, in the same order as `predicted`. */
  predictedNames?: (string | null)[];
}

/**
 * Per-mention predictions, one JSON object per line: the scored record (gold ids, ranked
 * predicted ids, NIL flag, top score, label, semantic types, per-mention scores), plus what
 * `context` adds (mention text, gold and predicted names). `cuilink compare` pairs two such files
 * by (noteId, mentionId) and needs no KB, since scores are inside; it ignores the context fields.
 */
export async function writePredictions(file: string, mentions: Iterable<ScoredMention>, context?: (m: ScoredMention) => PredictionContext): Promise<void> {
  const out = createWriteStream(file, { encoding: 'utf8' });
  const failed = new Promise<never>((_, reject) => out.once('error', (e) => reject(new InputError(`${file}: ${e.message}`, 'OUTPUT_ERROR', e))));
  failed.catch(() => {});
  for (const m of mentions) {
    const row = context === undefined ? m : { ...m, ...context(m) };
    if (!out.write(`${JSON.stringify(row)}\n`)) await Promise.race([once(out, 'drain'), failed]);
  }
  out.end();
  await Promise.race([once(out, 'finish'), failed]);
}

export async function readPredictions(file: string): Promise<ScoredMention[]> {
  const out: ScoredMention[] = [];
  for await (const line of readLines(file)) {
    if (line.text.trim() === '') continue;
    // Predictions hold mention text: the parser's own message would quote it.
    const json = parseJsonSafely(line.text);
    if ('reason' in json) throw new ParseError(file, line.number, json.reason);
    const value = json.value;
    const problem = checkScoredMention(value);
    if (problem) throw new ParseError(file, line.number, problem);
    out.push(value as ScoredMention);
  }
  return out;
}

function checkScoredMention(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'not a JSON object';
  const m = value as Record<string, unknown>;
  for (const key of ['noteId', 'mentionId', 'label'] as const) if (typeof m[key] !== 'string') return `'${key}' must be a string`;
  for (const key of ['goldIds', 'predicted', 'semanticTypes'] as const) if (!Array.isArray(m[key])) return `'${key}' must be an array`;
  if (typeof m.nil !== 'boolean' || typeof m.topScore !== 'number') return `'nil' must be a boolean and 'topScore' a number`;
  const s = m.scores as Record<string, unknown> | undefined;
  if (typeof s !== 'object' || s === null) return `'scores' must be an object`;
  for (const key of ['hit1', 'hit5', 'goldNil', 'predictedNil'] as const) if (typeof s[key] !== 'boolean') return `'scores.${key}' must be a boolean`;
  for (const key of ['reciprocalRank', 'similarity', 'ndcg5'] as const) if (typeof s[key] !== 'number') return `'scores.${key}' must be a number`;
  // Null: the link had no calibrated confidence. Absent `confidence` beside topScore: a row written before it was recorded.
  if (typeof s.confidence !== 'number' && s.confidence !== null) return `'scores.confidence' must be a number or null`;
  // Absent in rows written before it was kept: read as p(1 − p).
  if (s.calibrationVariance !== undefined && !(typeof s.calibrationVariance === 'number' && Number.isFinite(s.calibrationVariance) && s.calibrationVariance >= 0)) return `'scores.calibrationVariance' must be a finite number ≥ 0`;
  if (m.confidence !== undefined && typeof m.confidence !== 'number' && m.confidence !== null) return `'confidence' must be a number or null`;
  return undefined;
}
