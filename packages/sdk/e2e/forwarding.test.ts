// The event-type forwarder's filter, end to end: `EventTypeId = T AND MessageType = EventRequest AND From IS NULL`
// on every topic that produces T (packages/sdk/src/topology/derive.ts). happy.test.ts covers the MessageType half (a response
// about T never leaks through the forwarder); this file covers the `From IS NULL` half on a topic that both
// produces and consumes T, where forwarded, parked, replayed and Manager copies of T land beside original publishes.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventBody } from '@nimbus/sdk/contract';
import { HandlerRegistry } from '@nimbus/sdk';
import { eventually, withHarness } from './harness.ts';

describe('event-type forwarding', () => {
  test('a From-stamped EventRequest on a topic that produces and consumes its type is handled there, never forwarded', async () => {
    await withHarness(async (h) => {
      // billing consumes OrderPlaced and produces it (forwarder billing -> crm); crm consumes it.
      const billingSeen: string[] = [];
      const crmSeen: string[] = [];
      const record = (into: string[]) => (e: { n: number }, ctx: { from?: string }) =>
        void into.push(`${ctx.from}:${e.n}`);
      h.host({
        endpointId: 'billing',
        handlers: new HandlerRegistry().on('OrderPlaced', record(billingSeen)),
      });
      h.host({ endpointId: 'crm', handlers: new HandlerRegistry().on('OrderPlaced', record(crmSeen)) });

      // What shop's forwarder delivers on billing's topic: an OrderPlaced EventRequest already stamped From = shop.
      await h.send('billing', {
        sessionId: 'FW-1',
        body: eventBody('OrderPlaced', { orderId: 'FW-1', n: 1 }),
        props: {
          To: 'billing',
          From: 'shop',
          MessageType: 'EventRequest',
          EventId: crypto.randomUUID(),
          EventTypeId: 'OrderPlaced',
        },
      });
      // The marker: an original publish by billing (no From) in the same session, behind it on the same forwarders.
      // Had the stamped copy been forwarded, crm (and billing again) would get it first: one forwarder per consumer,
      // one session, in order.
      await h.publisher('billing').publish('OrderPlaced', { orderId: 'FW-1', n: 2 });

      await eventually(() => (crmSeen.length > 0 ? true : undefined), 'crm to handle the marker', 20_000);
      await eventually(() => (billingSeen.length > 1 ? true : undefined), 'billing to handle both', 20_000);
      assert.deepEqual(
        crmSeen,
        ['billing:2'],
        'only the original publish was forwarded, stamped From = billing',
      );
      // billing consumes what it produces, so its own forwarder brings it the marker too; the stamped copy it
      // handles once, as addressed to it, and not a second time through that forwarder.
      assert.deepEqual(billingSeen, ['shop:1', 'billing:2']);
      const rest = await h.resolverRestAfterMarker('FW-1', ['billing', 'crm']);
      assert.ok(
        !rest.some(
          (r) =>
            r.props.From === 'billing' &&
            r.type === 'EventRequest' &&
            r.content.EventContent?.EventJson?.includes('"n":1'),
        ),
        'no forwarded copy of the stamped request reached the Resolver',
      );
    });
  });
});
