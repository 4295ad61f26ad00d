import { isDateTime } from '../../kb/epoch-time.ts';
import { isObject } from '../../kb/safe-json.ts';

/** Label Studio export fields read the same way in its JSON and JSON-MIN forms. */

/** Task and annotation ids are numbers in Label Studio; kept as text for the reports. */
export function idOf(value: unknown): string | undefined {
  return typeof value === 'number' || (typeof value === 'string' && value !== '') ? String(value) : undefined;
}

/** `completed_by` is a user id in current exports, a user object ({id, email}) in older ones. */
export function annotatorOf(value: unknown): string | null {
  if (isObject(value)) {
    if (typeof value.email === 'string' && value.email !== '') return value.email;
    value = value.id;
  }
  if (typeof value === 'string' && value !== '') return value;
  return typeof value === 'number' ? `label-studio-user:${value}` : null;
}

/**
 * An annotation time (ISO text or epoch ms) as epoch ms, or undefined when it is none the gold can
 * carry: the gold file's `time` must be whole non-negative ms (`memory add --jsonl` refuses the
 * file otherwise) and GoldMention's `annotatedAt` an Avro long a Date holds.
 */
export function timeOf(value: unknown): number | undefined {
  const t = typeof value === 'string' ? Date.parse(value) : typeof value === 'number' ? value : NaN;
  return isDateTime(t) && t >= 0 ? t : undefined;
}
