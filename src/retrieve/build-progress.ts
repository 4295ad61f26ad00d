/**
 * A progress line with rate and ETA for long builds. Redraws in place on a TTY; elsewhere
 * (CI logs, pipes) prints at most one line every `logEveryMs` so logs stay short.
 */
export class BuildProgress {
  private readonly total: number;
  private readonly label: string;
  private readonly stream: NodeJS.WriteStream;
  private readonly startedAt = performance.now();
  // The first advance prints at once: a log shows the work started and its size.
  private lastPrintAt = Number.NEGATIVE_INFINITY;
  private readonly logEveryMs: number;
  private done = 0;

  constructor(label: string, total: number, stream: NodeJS.WriteStream = process.stderr, logEveryMs = 5000) {
    this.label = label;
    this.total = total;
    this.stream = stream;
    this.logEveryMs = logEveryMs;
  }

  advance(count: number): void {
    this.done += count;
    const now = performance.now();
    const interval = this.stream.isTTY ? 200 : this.logEveryMs;
    if (now - this.lastPrintAt >= interval || this.done >= this.total) {
      this.lastPrintAt = now;
      this.print(now);
    }
  }

  finish(): void {
    if (this.stream.isTTY) this.stream.write('\n');
  }

  private print(now: number): void {
    const seconds = (now - this.startedAt) / 1000;
    // Under a second a rate is noise (the first batch done a microsecond after start read 6,746,002/s).
    const rate = seconds >= 1 ? this.done / seconds : undefined;
    const remaining = rate !== undefined && rate > 0 ? (this.total - this.done) / rate : Number.POSITIVE_INFINITY;
    const width = 30;
    const filled = this.total === 0 ? width : Math.round((this.done / this.total) * width);
    const bar = `${'#'.repeat(filled)}${'.'.repeat(width - filled)}`;
    const eta = Number.isFinite(remaining) ? `${Math.ceil(remaining)}s` : '?';
    const line = `${this.label} [${bar}] ${this.done}/${this.total}${rate === undefined ? '' : ` ${rate.toFixed(0)}/s ETA ${eta}`}`;
    this.stream.write(this.stream.isTTY ? `\r${line}` : `${line}\n`);
  }
}
