// A message whose body is not a readable envelope arrives while its session is blocked: it is parked, replayed after
// the release and dead-lettered then - with its body as it was sent (bytes and content type) and a reason naming
// the real problem. Before, the parked and replayed copies carried the decoded content, an empty envelope, so the
// payload existed nowhere any more and the dead-letter said "the event payload (EventJson) is missing".
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { MessageType } from '@nimbus/sdk/contract';
import { HandlerRegistry } from '@nimbus/sdk';
import { eventually, withHarness } from './harness.ts';

/** The bytes of a received message's data section, as they were on the wire (the client JSON-parses `body`). */
function wireBytes(m: ServiceBusReceivedMessage): string {
  const section = m._rawAmqpMessage.body as { content?: unknown } | Buffer;
  const content = Buffer.isBuffer(section) ? section : section.content;
  assert.ok(Buffer.isBuffer(content), 'a data section');
  return content.toString('utf8');
}

describe('a body that is not an envelope, parked behind a block', () => {
  test('the replayed copy is dead-lettered with the sent bytes, the content type and the real problem', async () => {
    await withHarness(async (h) => {
      const handled: number[] = [];
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (e) => {
          handled.push(e.n);
          if (e.n === 1) throw new Error('CRM rejected');
        }),
      });
      h.deferredProcessor('crm');
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'P-1', n: 1 });
      const first = await h.resolver('P-1', 2, 30_000);
      assert.deepEqual(first.map((r) => r.type), ['EventRequest', 'ErrorResponse']);
      const blocker = String(first[0]!.props.EventId);

      // Spacing and number form the client's JSON round trip would not keep.
      const sent = [
        { id: 'ev-raw', body: '{"customerId": "P-1",  "n": 2.0, "note": "a raw payload, not the envelope"}', type: 'application/json' },
        { id: 'ev-text', body: 'customer P-1, n=3: not JSON at all', type: 'text/plain' },
      ];
      for (const s of sent) {
        await h.send('crm', {
          sessionId: 'P-1',
          body: s.body,
          contentType: s.type,
          props: { To: 'crm', From: 'shop', MessageType: MessageType.EventRequest, EventId: s.id, EventTypeId: 'CustomerUpdated' },
        });
      }
      const parked = await h.resolver('P-1', 4, 30_000);
      assert.deepEqual(
        parked.filter((r) => r.type === 'DeferralResponse').map((r) => r.props.EventId),
        ['ev-raw', 'ev-text'],
      );

      await h.managerCommand('crm', MessageType.SkipRequest, { eventId: blocker, sessionId: 'P-1' });
      const collected: ServiceBusReceivedMessage[] = [];
      const dead = await eventually(
        async () => {
          const got = await h.deadLetters('crm', 'crm', 10, 300);
          collected.push(...got);
          return collected.length >= 2 ? collected : undefined;
        },
        'both replayed copies in the dead-letter queue',
        60_000,
      );
      const byEvent = new Map(dead.map((m) => [String(m.applicationProperties?.EventId), m]));
      for (const s of sent) {
        const m = byEvent.get(s.id);
        assert.ok(m, `${s.id} dead-lettered`);
        assert.equal(wireBytes(m), s.body, `${s.id}: the body as sent`);
        assert.equal(m.contentType, s.type, `${s.id}: the content type as sent`);
        assert.doesNotMatch(String(m.deadLetterReason), /EventJson\) is missing/);
      }
      assert.match(String(byEvent.get('ev-raw')!.deadLetterReason), /not a NimBus envelope/);
      assert.match(String(byEvent.get('ev-text')!.deadLetterReason), /not valid JSON/);
      // The handler never saw either; the Resolver was told of both dead-letters.
      assert.deepEqual(handled, [1]);
      const notices: string[] = [];
      while (notices.length < 2) {
        for (const r of await h.resolver('P-1', 1, 30_000)) {
          if (r.type === 'ErrorResponse' && r.props.DeadLetterReason) notices.push(String(r.props.EventId));
        }
      }
      assert.deepEqual(notices.sort(), ['ev-raw', 'ev-text']);
    });
  });
});
