/**
 * Errors with a stable code and a `retriable` flag (the shape of kafkajs/@platformatic errors):
 * the code, not the message, decides retry versus dead-letter, and the CLI prints the message alone.
 * It lives in src/kb, the first stage, so that every later folder may import it.
 */
export class CuilinkError extends Error {
  readonly code: string;
  readonly retriable: boolean;

  constructor(code: string, message: string, options: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CuilinkError';
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}

/** Bad user input (flags, files, records): never retried. */
export class InputError extends CuilinkError {
  constructor(message: string, code = 'INVALID_INPUT', cause?: unknown) {
    super(code, message, { retriable: false, cause });
    this.name = 'InputError';
  }
}

/** Malformed line in a data file: the message names file and line. */
export class ParseError extends InputError {
  readonly file: string;
  readonly line: number;

  constructor(file: string, line: number, reason: string) {
    super(`${file}:${line}: ${reason}`, 'PARSE_ERROR');
    this.name = 'ParseError';
    this.file = file;
    this.line = line;
  }
}
