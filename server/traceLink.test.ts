import { test } from 'node:test';
import assert from 'node:assert/strict';
import { traceUrl, traceUrlTemplate } from './traceLink.ts';

const ID = '4bf92f3577b34da6a3ce929d0e0e4736';

test('a usable template links a trace id; without one the id is shown unlinked', () => {
  const jaeger = traceUrlTemplate({ NIMBUS_TRACE_URL_TEMPLATE: 'https://jaeger.example.com/trace/{traceId}' });
  assert.equal(traceUrl(ID, jaeger), `https://jaeger.example.com/trace/${ID}`);
  const insights = traceUrlTemplate({ NIMBUS_TRACE_URL_TEMPLATE: 'https://portal.azure.com/#view/AppInsights/q?operationId={traceId}&x={traceId}' });
  assert.equal(traceUrl(ID, insights), `https://portal.azure.com/#view/AppInsights/q?operationId=${ID}&x=${ID}`);
  assert.equal(traceUrl(ID, undefined), null);
  assert.equal(traceUrl(null, jaeger), null);
});

test('templates without the placeholder or not http(s), and ids that are not W3C trace ids, give no link', () => {
  for (const t of ['', 'https://jaeger.example.com/trace/', 'javascript:alert({traceId})', 'not a url {traceId}', 'ftp://x/{traceId}'])
    assert.equal(traceUrlTemplate({ NIMBUS_TRACE_URL_TEMPLATE: t }), undefined, t);
  const jaeger = traceUrlTemplate({ NIMBUS_TRACE_URL_TEMPLATE: 'https://jaeger.example.com/trace/{traceId}' });
  for (const bad of ['"><script>', ID.toUpperCase(), ID.slice(1)]) assert.equal(traceUrl(bad, jaeger), null, bad);
});
