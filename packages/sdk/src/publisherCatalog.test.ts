// The publisher given the catalog refuses, before anything is sent, what would go into a void: an event type the
// endpoint does not produce, a payload that fails the catalog's JSON schema, one without its session key. The
// client points at a port nothing listens on: a refusal must come before any connection (the sender is lazy).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ServiceBusClient } from '@azure/service-bus';
import { parseCatalog } from './contract/catalog.ts';
import { Publisher, PublishValidationError } from './publisher.ts';

const catalog = parseCatalog({
  endpoints: [
    { id: 'shop', produces: ['OrderPlaced'] },
    { id: 'crm', consumes: ['OrderPlaced', 'CustomerUpdated'] },
    { id: 'people', produces: ['CustomerUpdated'] },
  ],
  eventTypes: [
    {
      id: 'OrderPlaced',
      sessionKey: 'orderId',
      schema: {
        type: 'object',
        required: ['orderId', 'total'],
        properties: { orderId: { type: 'string' }, total: { type: 'number', minimum: 0 } },
      },
    },
    { id: 'CustomerUpdated', sessionKey: 'customerId' },
  ],
});

const nowhere = () =>
  new ServiceBusClient(
    'Endpoint=sb://127.0.0.1:9;SharedAccessKeyName=k;SharedAccessKey=v;UseDevelopmentEmulator=true',
  );

function refusal(p: Publisher, type: string, payload: unknown, options = {}): string {
  try {
    p.prepare(type, payload, options);
  } catch (error) {
    assert.ok(error instanceof PublishValidationError, String(error));
    return error.message;
  }
  assert.fail(`${type} ${JSON.stringify(payload)} was not refused`);
}

describe('publisher with the catalog', () => {
  test('an event type the endpoint does not produce: says which endpoint produces what, and what to change', () => {
    const p = new Publisher({ client: nowhere(), endpointId: 'shop', catalog });
    const message = refusal(p, 'CustomerUpdated', { customerId: 'C-1' });
    assert.match(message, /endpoint 'shop' does not produce 'CustomerUpdated' \(it produces: OrderPlaced\)/);
    assert.match(message, /add 'CustomerUpdated' to its produces in the catalog and run `npm run provision`/);
    // An endpoint the catalog does not know is refused at construction.
    assert.throws(
      () => new Publisher({ client: nowhere(), endpointId: 'billing', catalog }),
      /endpoint 'billing' is not in the catalog/,
    );
  });

  test("a payload that fails the catalog's JSON schema: names the failing fields", () => {
    const p = new Publisher({ client: nowhere(), endpointId: 'shop', catalog });
    const message = refusal(p, 'OrderPlaced', { orderId: 'O-1', total: -3 });
    assert.match(message, /OrderPlaced payload does not match the catalog's JSON schema: .*total/);
    assert.match(refusal(p, 'OrderPlaced', { orderId: 'O-1' }), /total/);
    assert.match(refusal(p, 'OrderPlaced', { orderId: 7, total: 1 }), /orderId/);
  });

  test('a payload without its session key: names the key and the way out', () => {
    const p = new Publisher({ client: nowhere(), endpointId: 'people', catalog });
    const message = refusal(p, 'CustomerUpdated', { name: 'no key' });
    assert.match(
      message,
      /CustomerUpdated payload has no value for its session key 'customerId': set payload.customerId/,
    );
    assert.match(message, /or pass options.sessionId/);
    // An explicit session id is a deliberate choice, and a valid payload passes with the key as its session.
    assert.equal(
      p.prepare('CustomerUpdated', { name: 'no key' }, { sessionId: 's' }).published.sessionId,
      's',
    );
    assert.equal(p.prepare('CustomerUpdated', { customerId: 'C-9' }).published.sessionId, 'C-9');
  });

  test('a valid publish passes every check; without a catalog nothing changes', () => {
    const p = new Publisher({ client: nowhere(), endpointId: 'shop', catalog });
    assert.equal(p.prepare('OrderPlaced', { orderId: 'O-1', total: 3 }).published.sessionId, 'O-1');
    const plain = new Publisher({ client: nowhere(), endpointId: 'shop' });
    assert.doesNotThrow(() => plain.prepare('CustomerUpdated', { anything: true }));
  });
});
