// The re-check of a replay trigger whose parked session another receiver held: a copy of the trigger scheduled for
// later, so that what that receiver's pass did not replay (parked above its bound, or its lock lingering after its
// pass ended) still gets a pass. The deferred processor cannot tell a rival pass that replays everything from a lock
// that outlives a pass that is already over: its own `released` map knows only the locks this process released.
import type { ServiceBusMessage, ServiceBusReceivedMessage } from '@azure/service-bus';
import { deriveId } from './outbound.ts';
import { SdkProp } from './wire.ts';

/**
 * How many times a trigger refused as session-locked is scheduled again before it is completed for good. Each copy
 * answers one refusal, so the chain is a line, not a tree; the bound keeps two processors (or a session held for
 * ever) from passing it back and forth without end. A rival's pass that outlasts the chain is still covered: its
 * pass-end copy makes the main handler send the next trigger when more was parked after its bound.
 */
export const MAX_LOCKED_RECHECKS = 5;

/** The default delay of a re-check: the lock duration the SDK provisions (topology/provision.ts, PT30S). */
export const DEFAULT_LOCKED_RECHECK_DELAY_MS = 30_000;

/** How many re-checks came before this trigger (0 for one the main handler sent). */
export function lockedRechecksOf(trigger: ServiceBusReceivedMessage): number {
  const hops = trigger.applicationProperties?.[SdkProp.LockedRecheck];
  return typeof hops === 'number' && Number.isInteger(hops) && hops > 0 ? hops : 0;
}

/**
 * The trigger's copy for its next re-check: same session, body and properties (ReplayUntil included), one more
 * hop. Its MessageId is derived from the trigger's and the hop, so a trigger redelivered after its completion was
 * lost schedules the same copy (a broker with duplicate detection keeps one; without it, a second copy costs one
 * pass that finds nothing or is answered `already-replayed`).
 */
export function buildLockedRecheck(trigger: ServiceBusReceivedMessage, hop: number): ServiceBusMessage {
  return {
    body: trigger.body as unknown,
    messageId: deriveId('locked-recheck', String(trigger.messageId ?? ''), hop),
    ...(trigger.sessionId ? { sessionId: trigger.sessionId } : {}),
    ...(trigger.contentType === undefined ? {} : { contentType: trigger.contentType }),
    ...(trigger.correlationId === undefined ? {} : { correlationId: trigger.correlationId }),
    applicationProperties: { ...trigger.applicationProperties, [SdkProp.LockedRecheck]: hop },
  };
}
