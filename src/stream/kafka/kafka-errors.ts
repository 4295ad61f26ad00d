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
  /** SASL authentication failed (the library's AuthenticationError): never retried. */
  authentication: boolean;
  /** The broker's own words for a refused request (e.g. why SASL authentication failed). */
  serverErrorMessage?: string;
  /** A TLS failure: Node's certificate verification code or an OpenSSL alert (ERR_SSL_…). */
  tls?: { code: string; message: string };
  /** Our own error raised inside the library (a SASL token provider's). */
  ours?: CuilinkError;
}

/** Node's codes for a broker certificate that does not verify (tls.connect, X509_V_ERR_* names). */
const TLS_VERIFY_CODES = /^(SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_[A-Z_]+|ERR_TLS_CERT_ALTNAME_INVALID|INVALID_CA|INVALID_PURPOSE|CERT_UNTRUSTED|CERT_REJECTED|HOSTNAME_MISMATCH)$/;

/** The first protocol error id (e.g. MESSAGE_TOO_LARGE) and retry hint found in a library error and what it wraps. */
function factsOf(error: unknown, facts: LibraryErrorFacts = { network: false, timeout: false, authentication: false }, depth = 0): LibraryErrorFacts {
  if (typeof error !== 'object' || error === null || depth > 6) return facts;
  if (error instanceof CuilinkError) {
    facts.ours ??= error;
    return facts;
  }
  const e = error as { apiId?: unknown; canRetry?: unknown; code?: unknown; errors?: unknown; cause?: unknown; serverErrorMessage?: unknown };
  if (e.code === 'PLT_KFK_AUTHENTICATION') facts.authentication = true;
  if (typeof e.serverErrorMessage === 'string' && e.serverErrorMessage !== '') facts.serverErrorMessage ??= e.serverErrorMessage;
  if (typeof e.code === 'string' && (TLS_VERIFY_CODES.test(e.code) || e.code.startsWith('ERR_SSL_'))) facts.tls ??= { code: e.code, message: (error as Error).message };
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
  const root = facts.ours?.message ?? facts.serverErrorMessage ?? facts.rootMessage;
  const message = `${operation}: ${outer}${root !== undefined && root !== outer ? ` (${oneLine(root)})` : ''}`;
  // A token provider's failure (e.g. OAUTH_TOKEN_REFUSED) keeps its code and retry hint.
  if (facts.ours !== undefined) return new CuilinkError(facts.ours.code, message, { retriable: facts.ours.retriable, cause: error });
  // Certificates and credentials do not fix themselves: not retried, so a misconfigured start stops at once.
  if (facts.tls !== undefined) return new CuilinkError('KAFKA_TLS', `${operation}: ${outer} (TLS: ${describeTls(facts.tls)})`, { retriable: false, cause: error });
  if (facts.authentication) return new CuilinkError(facts.apiId !== undefined ? `KAFKA_${facts.apiId}` : 'KAFKA_AUTHENTICATION', message, { retriable: false, cause: error });
  if (facts.apiId !== undefined) {
    const fenced = FENCED.has(facts.apiId);
    return new CuilinkError(`KAFKA_${facts.apiId}`, fenced ? `${message} (${facts.apiId})` : message, { retriable: !fenced && facts.canRetry === true, cause: error });
  }
  if (facts.timeout) return new CuilinkError('KAFKA_TIMEOUT', message, { retriable: true, cause: error });
  if (facts.network) return new CuilinkError('KAFKA_NETWORK', message, { retriable: true, cause: error });
  return new CuilinkError('KAFKA_CLIENT', message, { retriable: facts.canRetry === true, cause: error });
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/** A TLS failure in one line that says which side's certificate to look at. */
function describeTls(tls: { code: string; message: string }): string {
  if (tls.code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `${oneLine(tls.message)} (check the broker address or ssl.servername)`;
  if (!tls.code.startsWith('ERR_SSL_')) return `the broker's certificate is not trusted: ${oneLine(tls.message)} (${tls.code}; check ssl.caFile)`;
  // OpenSSL's message is `<hex>:error:<code>:SSL routines:<function>:<reason>:<source file>:…`: its reason is the part worth reading.
  const reason = /SSL routines:[^:]*:([^:]+)/.exec(tls.message)?.[1] ?? tls.code;
  if (/alert (bad certificate|certificate required|unknown ca|certificate unknown|certificate expired|certificate revoked)/i.test(reason)) {
    return `the broker refused the client certificate (${reason}; check ssl.certFile and ssl.keyFile)`;
  }
  return `handshake failed (${reason})`;
}

/** The broker refused a request as too large (one record, or the batch). */
export function isTooLargeCode(code: string): boolean {
  return code === 'KAFKA_MESSAGE_TOO_LARGE' || code === 'KAFKA_RECORD_LIST_TOO_LARGE';
}

/** Another producer took this one's transactional id: it must write nothing more (re-initialising would take the id back from the rightful owner). */
export function isProducerFencedCode(code: string): boolean {
  return code === 'KAFKA_PRODUCER_FENCED' || code === 'KAFKA_INVALID_PRODUCER_EPOCH' || code === 'KAFKA_TRANSACTIONAL_ID_AUTHORIZATION_FAILED';
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
