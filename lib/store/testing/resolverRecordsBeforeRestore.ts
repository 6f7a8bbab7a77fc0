// A store on which the Resolver records a claimed command right before a restore of that claim lands: the race
// between undoing a claim (the Manager's undo after a failed send, Reconcile's restore of an unsent claim) and the
// command that did reach the broker. The record is written through the real store as the Resolver writes it, so the
// restore meets the row the Resolver left, with the claim's id and status; one copy for the tests of both undos
// (server/manager/undoClaim.test.ts, server/reconcile/restoreRace.test.ts).
import assert from 'node:assert/strict';
import { Topic } from '@nimbus/sdk/contract';
import type { MessageStore } from '../index.ts';
import { msg } from './fixtures.ts';

export interface RacedStore {
  /** The real store, except for restoreStatusRow (the Resolver's record first). */
  store: MessageStore;
  /** The commands recorded so far, by MessageId: a test shows the race took place, not only that its row is right. */
  recorded: string[];
}

export function resolverRecordsBeforeRestore(store: MessageStore): RacedStore {
  const recorded: string[] = [];
  const raced = new Proxy(store, {
    get(target, prop) {
      if (prop === 'restoreStatusRow') {
        return async (...args: Parameters<MessageStore['restoreStatusRow']>) => {
          const [previous, expect] = args;
          // The claim the restore is conditional on: the command the Resolver records is the one it stands for.
          const claim = (await target.getStatusRow(previous.endpointId, previous.eventId, previous.sessionId))!;
          const command = msg(claim.messageType!, {
            endpointId: claim.endpointId,
            eventId: claim.eventId,
            sessionId: claim.sessionId,
            messageId: expect.lastMessageId,
            parentMessageId: claim.parentMessageId,
            from: Topic.Manager,
          });
          const r = await target.recordOutcome({ history: { ...command, enqueuedAt: new Date().toISOString() } as never, status: command });
          assert.equal(r.status.outcome, 'written', 'the Resolver recorded the command over the claim');
          recorded.push(command.messageId);
          return target.restoreStatusRow(...args);
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: raced, recorded };
}
