import { kGetApi, type Consumer } from '@platformatic/kafka';

type OffsetFetchApi = (connection: unknown, groups: unknown[], requireStable: boolean, done: (error: unknown, response?: unknown) => void) => void;

/** The first wait before asking again for offsets a transaction still holds; it doubles up to the second. */
const UNSTABLE_FIRST_WAIT_MS = 100;
const UNSTABLE_MAX_WAIT_MS = 1000;
/**
 * How long one fetch waits for a pending transaction before the library sees the refusal (it
 * retries, then the stream fails and the consumer restarts, logged). A transaction normally
 * settles within milliseconds of its commit; a stalled member's open one within its timeout.
 */
export const UNSTABLE_OFFSETS_WAIT_MS = 60_000;

/**
 * Makes the consumer fetch its committed offsets as Java's consumer does: with require_stable
 * (KIP-447). @platformatic/kafka sends OffsetFetch with require_stable false (Consumer
 * #listCommittedOffsets, consumer.js), and then the coordinator answers a partition whose offset
 * commit sits in a transaction that is not finished yet (committed but its markers not written,
 * or still open in a member that stalled) with the offset from before that transaction: a new
 * owner after a restart or a rebalance would read again records whose outputs that transaction
 * committed, and read_committed consumers would see them twice. Asked for stable offsets, the
 * coordinator answers UNSTABLE_OFFSET_COMMIT until the transaction ends, and this asks again.
 * Without transactional commits (at-least-once) nothing is pending and the answer is the same.
 *
 * Every OffsetFetch of this consumer goes through its own `kGetApi`, so it is changed there.
 */
export function requireStableOffsets<T extends Consumer>(consumer: T): T {
  const getApi = consumer[kGetApi];
  const stableGetApi = (name: string, done: (error: unknown, api?: unknown) => void): void =>
    getApi.call(consumer, name, (error, api) => {
      if (error || name !== 'OffsetFetch') return done(error, api);
      const offsetFetch = api as unknown as OffsetFetchApi;
      const stableOffsetFetch: OffsetFetchApi = (connection, groups, _requireStable, answered) => {
        const started = Date.now();
        const ask = (wait: number): void =>
          offsetFetch(connection, groups, true, (error, response) => {
            if (error && isUnstableOffsetCommit(error) && Date.now() - started + wait < UNSTABLE_OFFSETS_WAIT_MS && !consumer.closed) {
              setTimeout(() => ask(Math.min(UNSTABLE_MAX_WAIT_MS, wait * 2)), wait);
              return;
            }
            answered(error, response);
          });
        ask(UNSTABLE_FIRST_WAIT_MS);
      };
      done(null, stableOffsetFetch);
    });
  Object.defineProperty(consumer, kGetApi, { value: stableGetApi, configurable: true, writable: true });
  return consumer;
}

/** The coordinator still holds a transactional offset commit for one of the partitions asked for. */
function isUnstableOffsetCommit(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 6) return false;
  const e = error as { apiId?: unknown; errors?: unknown; cause?: unknown };
  if (e.apiId === 'UNSTABLE_OFFSET_COMMIT') return true;
  return (Array.isArray(e.errors) && e.errors.some((inner) => isUnstableOffsetCommit(inner, depth + 1))) || isUnstableOffsetCommit(e.cause, depth + 1);
}
