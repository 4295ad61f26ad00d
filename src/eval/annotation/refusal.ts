/**
 * Why an annotation was not turned into gold. Every refusal concerns one task, annotation or line;
 * the others are imported regardless. The kinds are the summary's rows, in this order.
 */
export const REFUSAL_KINDS = [
  'not-json',
  'not-a-task',
  'unknown-request',
  'cancelled',
  'missing-span',
  'invalid-span',
  'span-mismatch',
  'not-a-candidate',
  'unknown-concept',
  'nil-conflict',
  'no-answer',
  'duplicate',
] as const;

export type RefusalKind = (typeof REFUSAL_KINDS)[number];

export interface ImportRefusal {
  /** 1-based line of the input where the task or line starts. */
  line: number | undefined;
  /** Label Studio's task id (absent for plain JSONL). */
  task: string | undefined;
  kind: RefusalKind;
  /** Names ids and offsets, never note or mention text. */
  reason: string;
}

/** `line 40 / task 17: reason`, the form the CLI prints on stderr. */
export function formatRefusal(r: ImportRefusal): string {
  const where = [r.line === undefined ? undefined : `line ${r.line}`, r.task === undefined ? undefined : `task ${r.task}`].filter((p) => p !== undefined);
  return `${where.length > 0 ? where.join(' / ') : 'input'}: ${r.reason}`;
}

/**
 * A value an annotator typed, quoted in a reason only when it looks like a concept id (no spaces,
 * a digit in it): the free id field could hold anything, the mention's text included, and
 * reasons go to logs.
 */
export function quoteTyped(value: string): string {
  return /^[A-Za-z0-9_.:\-/]{1,64}$/.test(value) && /\d/.test(value) ? `'${value}'` : `a value that is not an id (${value.length} characters, not shown)`;
}
