/**
 * A Map that keeps at most `capacity` keys, forgetting the least recently touched first: the
 * selector's per-surface state must not grow with a stream that never repeats itself.
 */
export class BoundedRecencyMap<K, V> {
  private readonly entries = new Map<K, V>();
  private readonly capacity: number;
  /** Keys forgotten to stay within capacity. */
  evicted = 0;

  constructor(capacity: number) {
    if (!(capacity >= 1)) throw new RangeError(`capacity must be at least 1, not ${capacity}`);
    this.capacity = capacity;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** Sets the value and makes the key the most recent. */
  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.capacity) {
      this.entries.delete(this.entries.keys().next().value as K);
      this.evicted++;
    }
  }

  delete(key: K): boolean {
    return this.entries.delete(key);
  }
}
