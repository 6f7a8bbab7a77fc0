import { test } from 'node:test';
import assert from 'node:assert/strict';
import { context, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import type { ServiceBusMessage } from '@azure/service-bus';
import { Prop } from './contract/properties.ts';
import {
  extractTraceContext,
  formatTraceparent,
  injectTraceContext,
  parseTraceparent,
  traceIdOf,
  withProcessSpan,
  tracingEnabled,
  withSendSpan,
} from './tracing.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

test('a W3C traceparent is read into a remote span context and written back unchanged', () => {
  const header = `00-${TRACE}-${SPAN}-01`;
  const sc = parseTraceparent(header, 'congo=t61rcWkgMzE');
  assert.ok(sc);
  assert.equal(sc.traceId, TRACE);
  assert.equal(sc.spanId, SPAN);
  assert.equal(sc.traceFlags, TraceFlags.SAMPLED);
  assert.equal(sc.isRemote, true);
  assert.equal(sc.traceState?.get('congo'), 't61rcWkgMzE');
  assert.equal(formatTraceparent(sc), header);
  assert.equal(formatTraceparent({ ...sc, traceFlags: TraceFlags.NONE }), `00-${TRACE}-${SPAN}-00`);
});

test('malformed or invalid traceparent values are ignored, never thrown on', () => {
  for (const bad of [
    undefined,
    42,
    '',
    'garbage',
    `00-${TRACE.toUpperCase()}-${SPAN}-01`, // upper-case hex is not allowed
    `00-${'0'.repeat(32)}-${SPAN}-01`, // all-zero trace id
    `00-${TRACE}-${'0'.repeat(16)}-01`, // all-zero span id
    `ff-${TRACE}-${SPAN}-01`, // version ff is invalid
    `00-${TRACE}-${SPAN}-01-extra`, // version 00 has exactly four parts
    `00-${TRACE}-${SPAN}`,
    'x'.repeat(10_000),
  ]) {
    assert.equal(parseTraceparent(bad), undefined, String(bad).slice(0, 60));
  }
  // A later version may append fields; the first four are still read.
  assert.equal(parseTraceparent(`01-${TRACE}-${SPAN}-01-future`)?.traceId, TRACE);
});

test('traceIdOf reads the trace id a message carries', () => {
  assert.equal(traceIdOf({ [Prop.TraceParent]: `00-${TRACE}-${SPAN}-01` }), TRACE);
  assert.equal(traceIdOf({ [Prop.TraceParent]: 'nope' }), null);
  assert.equal(traceIdOf({}), null);
  assert.equal(traceIdOf(undefined), null);
});

test('inject writes the context given, replaces a stale tracestate, and leaves properties alone without a span', () => {
  const props: Record<string, unknown> = { [Prop.TraceState]: 'old=1' };
  injectTraceContext(props, ROOT_CONTEXT);
  assert.deepEqual({ ...props }, { [Prop.TraceState]: 'old=1' }, 'no span context: nothing changes');

  const ctx = extractTraceContext({ [Prop.TraceParent]: `00-${TRACE}-${SPAN}-01` });
  injectTraceContext(props, ctx);
  assert.equal(props[Prop.TraceParent], `00-${TRACE}-${SPAN}-01`);
  assert.equal(props[Prop.TraceState], undefined, 'the stale tracestate belongs to another trace');
});

test('with no OpenTelemetry SDK registered, sends and processing run untouched (no context, no properties)', async () => {
  assert.equal(trace.getSpan(context.active()), undefined);
  assert.equal(tracingEnabled(), false);
  const message: ServiceBusMessage = { body: 'x', applicationProperties: { [Prop.To]: 'A' } };
  let ran = 0;
  const r = await withSendSpan('orders', message, async () => {
    ran++;
    return 7;
  });
  assert.equal(r, 7);
  assert.equal(ran, 1);
  assert.deepEqual(message.applicationProperties, { [Prop.To]: 'A' }, 'no traceparent is invented when tracing is off');

  // A message that carries a trace: processing runs once and its error propagates unchanged.
  const received = { messageId: 'm1', applicationProperties: { [Prop.TraceParent]: `00-${TRACE}-${SPAN}-01` } };
  await assert.rejects(
    withProcessSpan(received, { topic: 'orders', subscription: 'orders' }, async () => {
      throw new TypeError('handler bug');
    }),
    TypeError,
  );
});
