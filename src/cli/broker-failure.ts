import { CuilinkError, InputError } from '../kb/errors.ts';
import { kafkaBrokersInUse } from '../stream/kafka-client.ts';

/** A Kafka failure (unreachable, refused, timed out, TLS or SASL refused, a broker's error): exit 3, not a flag error's 2. */
export function isBrokerFailure(error: unknown): error is CuilinkError {
  return error instanceof CuilinkError && !(error instanceof InputError) && error.code.startsWith('KAFKA_');
}

/**
 * The one line a command ends with on a broker failure: the cause, with the brokers named when the
 * cause does not name one (a timeout reads 'Connection closed'); any other error's message as it is.
 */
export function brokerFailureLine(error: CuilinkError): string {
  const brokers = kafkaBrokersInUse();
  if (!isBrokerFailure(error) || brokers.length === 0 || brokers.some((b) => error.message.includes(b))) return error.message;
  const what = error.code === 'KAFKA_NETWORK' || error.code === 'KAFKA_TIMEOUT' ? 'cannot reach the Kafka broker' : 'Kafka broker';
  return `${what}${brokers.length > 1 ? 's' : ''} ${brokers.join(',')}: ${error.message}`;
}
