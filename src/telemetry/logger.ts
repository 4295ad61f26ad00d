/**
 * Structured JSON-line logging for the long-running stage. Fields are metadata only (ids,
 * offsets, counts, error codes): callers never pass note or mention text, and `phi()` is the one
 * way to add such text, which it replaces with a marker unless the operator enabled `logPhi`.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
  /** `value` when PHI logging is on, a redaction marker otherwise. */
  phi(value: string): string;
}

export type LogSink = (line: string) => void;

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
export const REDACTED = '[redacted]';

export interface LoggerOptions {
  level?: LogLevel;
  logPhi?: boolean;
  sink?: LogSink;
  fields?: Record<string, unknown>;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = ORDER[options.level ?? 'info'];
  const sink = options.sink ?? ((line: string) => process.stderr.write(`${line}\n`));
  const base = options.fields ?? {};
  const write = (at: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (ORDER[at] < level) return;
    sink(JSON.stringify({ time: new Date().toISOString(), level: at, message, ...base, ...fields }, errorReplacer));
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (fields) => createLogger({ ...options, fields: { ...base, ...fields } }),
    phi: (value) => (options.logPhi ? value : REDACTED),
  };
}

/** Errors serialize as name, code and message; stacks stay out of the line. */
function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, code: (value as { code?: unknown }).code, message: value.message };
  return value;
}
