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
 * by (noteId, mentionId) and needs no KB, since scores are inside; of the context it reads only the
 * mention text, to tell that a pair is one mention.
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

/** A row as read back: the scored mention, and the mention text where the writer had it. */
export type PredictionRow = ScoredMention & Pick<PredictionContext, 'text'>;

export async function readPredictions(file: string): Promise<PredictionRow[]> {
  const out: PredictionRow[] = [];
  for await (const line of readLines(file)) {
    if (line.text.trim() === '') continue;
    // Predictions hold mention text: the parser's own message would quote it.
    const json = parseJsonSafely(line.text);
    if ('reason' in json) throw new ParseError(file, line.number, json.reason);
    const value = json.value;
    const problem = checkScoredMention(value);
    if (problem) throw new ParseError(file, line.number, problem);
    out.push(value as PredictionRow);
  }
  return out;
}

/**
 * A number the writer could have written where a probability or a [0, 1] score goes. A ratio such
 * as nDCG is 1 exactly when it is 1 (same terms, same order), but a file is refused whole: a
 * rounding ulp past 1 is not worth refusing one, so 1e-9 of slack is allowed above 1 (the last
 * reliability bin takes it), none under 0 (a bin index under 0).
 */
const UNIT_SLACK = 1e-9;
const isUnit = (value: unknown): value is number => typeof value === 'number' && value >= 0 && value <= 1 + UNIT_SLACK;
const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.every((item) => typeof item === 'string');

/**
 * Why a parsed line is not a row the writer could have written, or undefined. The scores are
 * checked against their ranges, not just their types: compare sums them in integer units, and
 * 1e400 (Infinity once read) made that sum throw, while a confidence past [0, 1] fell in no
 * reliability bin or in one it overfilled, and the ECE and its p-value said nothing of it.
 */
function checkScoredMention(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'not a JSON object';
  const m = value as Record<string, unknown>;
  for (const key of ['noteId', 'mentionId', 'label'] as const) if (typeof m[key] !== 'string') return `'${key}' must be a string`;
  for (const key of ['goldIds', 'predicted', 'semanticTypes'] as const) if (!isStringArray(m[key])) return `'${key}' must be an array of strings`;
  if (typeof m.nil !== 'boolean') return `'nil' must be a boolean`;
  if (!Number.isFinite(m.topScore)) return `'topScore' must be a finite number`;
  // compare checks that both files hold the same mention by it, where both have it.
  if (m.text !== undefined && typeof m.text !== 'string') return `'text' must be a string`;
  const s = m.scores as Record<string, unknown> | undefined;
  if (typeof s !== 'object' || s === null) return `'scores' must be an object`;
  for (const key of ['hit1', 'hit5', 'goldNil', 'predictedNil'] as const) if (typeof s[key] !== 'boolean') return `'scores.${key}' must be a boolean`;
  for (const key of ['reciprocalRank', 'similarity', 'ndcg5'] as const) if (!isUnit(s[key])) return `'scores.${key}' must be a number from 0 to 1`;
  // Null: the link had no calibrated confidence. Absent `confidence` beside topScore: a row written before it was recorded.
  if (!isUnit(s.confidence) && s.confidence !== null) return `'scores.confidence' must be a number from 0 to 1, or null`;
  // Absent in rows written before it was kept: read as p(1 − p).
  if (s.calibrationVariance !== undefined && !(typeof s.calibrationVariance === 'number' && Number.isFinite(s.calibrationVariance) && s.calibrationVariance >= 0)) return `'scores.calibrationVariance' must be a finite number ≥ 0`;
  if (m.confidence !== undefined && !Number.isFinite(m.confidence) && m.confidence !== null) return `'confidence' must be a finite number or null`;
  return undefined;
}
