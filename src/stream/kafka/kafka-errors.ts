import { CuilinkError } from '../../kb/errors.ts';

/**
 * Broker answers that mean this instance lost its right to write or commit: another instance took
 * its transactional id (fencing) or the group moved on (KIP-447). Retrying cannot help; the work
 * belongs to someone else now.
 */
const FENCED = new Set(['PRODUCER_FENCED', 'INVALID_PRODUCER_EPOCH', 'FENCED_INSTANCE_ID', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'REBALANCE_IN_PROGRESS', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED']);

interface LibraryErrorFacts {
  apiId?: string;
  canRetry?: boolean;
  network: boolean;
  timeout: boolean;
  /** The innermost cause's message (e.g. `connect ECONNREFUSED 127.0.0.1:9092`), which says what actually went wrong. */
  rootMessage?: string;
}

/** The first protocol error id (e.g. MESSAGE_TOO_LARGE) and retry hint found in a library error and what it wraps. */
function factsOf(error: unknown, facts: LibraryErrorFacts = { network: false, timeout: false }, depth = 0): LibraryErrorFacts {
  if (typeof error !== 'object' || error === null || depth > 6) return facts;
  const e = error as { apiId?: unknown; canRetry?: unknown; code?: unknown; errors?: unknown; cause?: unknown };
  if (typeof e.apiId === 'string' && facts.apiId === undefined) facts.apiId = e.apiId;
  if (typeof e.canRetry === 'boolean' && facts.canRetry === undefined) facts.canRetry = e.canRetry;
  if (e.code === 'PLT_KFK_NETWORK') facts.network = true;
  if (e.code === 'PLT_KFK_TIMEOUT') facts.timeout = true;
  const inner = Array.isArray(e.errors) && e.errors.length > 0 ? e.errors[0] : e.cause;
  if (inner === undefined || inner === null) facts.rootMessage ??= (error as Error).message;
  if (Array.isArray(e.errors)) for (const inner of e.errors) factsOf(inner, facts, depth + 1);
  factsOf(e.cause, facts, depth + 1);
  return facts;
}

/**
 * A Kafka library error as a CuilinkError: code `KAFKA_<PROTOCOL_ERROR>` (KAFKA_MESSAGE_TOO_LARGE,
 * KAFKA_PRODUCER_FENCED…), `KAFKA_NETWORK`, `KAFKA_TIMEOUT` or `KAFKA_CLIENT`, with `retriable`
 * from the library's own hint (fencing never is). The original stays as `cause`. None of these is
 * ever about a record: the stage treats them as internal faults, never dead-letters them.
 */
export function asKafkaError(error: unknown, operation: string): CuilinkError {
  if (error instanceof CuilinkError) return error;
  const facts = factsOf(error);
  const outer = (error as Error)?.message ?? String(error);
  const message = `${operation}: ${outer}${facts.rootMessage !== undefined && facts.rootMessage !== outer ? ` (${facts.rootMessage})` : ''}`;
  if (facts.apiId !== undefined) {
    const fenced = FENCED.has(facts.apiId);
    return new CuilinkError(`KAFKA_${facts.apiId}`, fenced ? `${message} (${facts.apiId})` : message, { retriable: !fenced && facts.canRetry === true, cause: error });
  }
  if (facts.timeout) return new CuilinkError('KAFKA_TIMEOUT', message, { retriable: true, cause: error });
  if (facts.network) return new CuilinkError('KAFKA_NETWORK', message, { retriable: true, cause: error });
  return new CuilinkError('KAFKA_CLIENT', message, { retriable: facts.canRetry === true, cause: error });
}

/** The broker refused a request as too large (one record, or the batch). */
export function isTooLargeCode(code: string): boolean {
  return code === 'KAFKA_MESSAGE_TOO_LARGE' || code === 'KAFKA_RECORD_LIST_TOO_LARGE';
}

/** This instance was fenced or the group moved on: its uncommitted work belongs to another instance now. */
export function isFencedCode(code: string): boolean {
  return code.startsWith('KAFKA_') && FENCED.has(code.slice('KAFKA_'.length));
}

/** Runs a library call, turning its failure into a CuilinkError. */
export async function kafkaCall<T>(operation: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw asKafkaError(error, operation);
  }
}
