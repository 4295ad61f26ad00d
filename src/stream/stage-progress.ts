/**
 * What keeps the stage from making progress right now: operations whose last attempt failed
 * (a partition's delivery retrying against an unreachable broker, a decode waiting for the schema
 * registry) until they next succeed. /readyz is 503 while any is listed, so an orchestrator and
 * an operator see a stuck stage, not only a dead one.
 */
export class StageProgress {
  private readonly failing = new Map<string, number>();

  /** `key` names the operation and its partition, e.g. `deliver notes/0`. */
  failed(key: string): void {
    if (!this.failing.has(key)) this.failing.set(key, Date.now());
  }

  succeeded(key: string): void {
    this.failing.delete(key);
  }

  /** The operation gave up (its records were handed back to Kafka, maybe to another instance): it no longer holds the stage. */
  abandoned(key: string): void {
    this.failing.delete(key);
  }

  /** Operations failing now, with when they started failing (epoch ms). */
  get stalled(): [string, number][] {
    return [...this.failing];
  }

  get progressing(): boolean {
    return this.failing.size === 0;
  }
}
