import { ROOT_CONTEXT, trace, type Context, type SpanContext, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/** Kafka record headers: one value per key, or several where a key repeats. */
export type RecordHeaders = Record<string, Buffer | string | (Buffer | string)[] | undefined>;

// W3C trace context directly rather than the global propagator, so headers flow even when no SDK is set up.
const propagator = new W3CTraceContextPropagator();

const getter: TextMapGetter<RecordHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const value = carrier[key];
    if (value === undefined) return undefined;
    const first = Array.isArray(value) ? value[0] : value;
    return first === undefined ? undefined : first.toString();
  },
};

const setter: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

/**
 * The context a producer put in a record's `traceparent`/`tracestate` headers (W3C trace context).
 * Extracted into the root context, not the active one: a record without a valid traceparent
 * carries no span, whatever span is active where it is read.
 */
export function extractRecordContext(headers: RecordHeaders | undefined): Context {
  return propagator.extract(ROOT_CONTEXT, headers ?? {}, getter);
}

/** The remote span context carried by a record, when its headers carry a valid one. */
export function recordSpanContext(headers: RecordHeaders | undefined): SpanContext | undefined {
  const spanContext = trace.getSpanContext(extractRecordContext(headers));
  return spanContext && trace.isSpanContextValid(spanContext) ? spanContext : undefined;
}

/** `traceparent`/`tracestate` headers for an outgoing record, from `ctx`. */
export function injectRecordContext(ctx: Context): Record<string, string> {
  const headers: Record<string, string> = {};
  propagator.inject(ctx, headers, setter);
  return headers;
}
