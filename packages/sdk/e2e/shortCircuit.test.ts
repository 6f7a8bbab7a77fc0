// A pipeline behaviour that returns without calling next() - the specification's "short-circuit success for known
// idempotent no-ops" - on a real host and the embedded emulator: the delivery is answered ResolutionResponse and
// completed without running the handler, and the session goes on. Before, it was left unsettled: the host held the
// session, the message came back until its deliveries were spent, and the broker dead-lettered it without a word
// to the Resolver (its row stayed Pending).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import { HandlerRegistry } from '@nimbus/sdk';
import type { PipelineBehavior } from '@nimbus/sdk';
import { customerBody, storyOf, withHarness } from './harness.ts';

describe('a behaviour that short-circuits', () => {
  test('the delivery is answered and completed without the handler; the next one in the session runs', async () => {
    await withHarness(async (h) => {
      const handled: string[] = [];
      const results: string[] = [];
      const knownNoop: PipelineBehavior = async (ctx, next) => {
        if (ctx.message.eventId === 'ev-noop') return;
        await next();
      };
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (e) => void handled.push(`E${e.n}`)),
        behaviors: [knownNoop],
        onDelivery: (result) => void results.push(result),
      });
      for (const [id, n] of [['ev-noop', 1], ['ev-next', 2]] as const) {
        await h.send('crm', {
          sessionId: 'S-1',
          body: customerBody({ customerId: 'S-1', n }),
          props: { To: 'crm', From: 'shop', MessageType: MessageType.EventRequest, EventId: id, EventTypeId: 'CustomerUpdated' },
        });
      }
      const records = await h.resolver('S-1', 4, 30_000);
      assert.deepEqual(storyOf(records).responses, ['ResolutionResponse:E1', 'ResolutionResponse:E2']);
      assert.deepEqual(
        records.filter((r) => r.type === 'ResolutionResponse').map((r) => r.props.EventId),
        ['ev-noop', 'ev-next'],
      );
      assert.deepEqual(handled, ['E2']);
      assert.deepEqual(results, ['shortCircuited', 'completed']);
      assert.deepEqual(await h.deadLetters('crm', 'crm', 10, 300), [], 'nothing dead-lettered');
    });
  });
});
