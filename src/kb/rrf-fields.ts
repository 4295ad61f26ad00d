/**
 * Field access into one `|`-delimited RRF row without `split`: the pipe offsets go into a reused
 * Int32Array and only the fields a loader needs are sliced out. A full MRCONSO has 16M+ rows of 18
 * fields and MRREL 50M+; splitting each would allocate ~20 strings per row for nothing.
 */
export class RrfFields {
  private readonly ends: Int32Array;
  private text = '';
  private count = 0;

  constructor(maxFields: number) {
    this.ends = new Int32Array(maxFields + 1);
  }

  /** Indexes a row; returns the number of fields found (up to the capacity). */
  reset(text: string): number {
    this.text = text;
    let n = 0;
    let from = 0;
    const cap = this.ends.length;
    while (n < cap) {
      const at = text.indexOf('|', from);
      if (at < 0) break;
      this.ends[n++] = at;
      from = at + 1;
    }
    this.count = n;
    return n;
  }

  /** Field `i` (0-based) as a new string; '' when the row has fewer fields. */
  get(i: number): string {
    if (i >= this.count) return '';
    const start = i === 0 ? 0 : this.ends[i - 1]! + 1;
    return this.text.slice(start, this.ends[i]!);
  }

  /** Whether field `i` equals `value`, without allocating. */
  is(i: number, value: string): boolean {
    if (i >= this.count) return value.length === 0;
    const start = i === 0 ? 0 : this.ends[i - 1]! + 1;
    const end = this.ends[i]!;
    return end - start === value.length && this.text.startsWith(value, start);
  }

  /** First character code of field `i`, or -1 when empty. */
  firstChar(i: number): number {
    if (i >= this.count) return -1;
    const start = i === 0 ? 0 : this.ends[i - 1]! + 1;
    return start < this.ends[i]! ? this.text.charCodeAt(start) : -1;
  }
}
