/**
 * The most epoch milliseconds a Date holds either side of 1970 (100,000,000 days). A Kafka
 * timestamp, an Avro long or a JSON number may hold more; `new Date(ms).toISOString()` then throws
 * RangeError, so a value read from a record or a file is checked here before it is shown.
 */
export const MAX_DATE_MS = 8.64e15;

/** Whether `ms` is an epoch-millisecond time a Date holds: an integer within ±MAX_DATE_MS. */
export function isDateTime(ms: unknown): ms is number {
  return Number.isInteger(ms) && Math.abs(ms as number) <= MAX_DATE_MS;
}

/** `ms` as an ISO 8601 time, or undefined when no Date holds it (a damaged or hand-written value). */
export function isoTimeOf(ms: number): string | undefined {
  return isDateTime(ms) ? new Date(ms).toISOString() : undefined;
}
