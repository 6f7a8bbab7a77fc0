// Which operator commands an event's current state offers (the Event page's buttons and its confirm dialogs), and
// why an open dialog's command is gone when the event moved on under it. Pure, so it is unit-tested on its own; the
// server decides again on every command (a 409 when the state does not allow it).
import type { EventListItem } from './api.ts';

/** The Event page's commands, each with its own dialog. */
export type EventCommand = 'resubmit' | 'edit' | 'skip' | 'complete' | 'fail';

/** The command as its button on the page names it. */
export const COMMAND_BUTTON: Record<EventCommand, string> = {
  resubmit: 'Resubmit',
  edit: 'Resubmit with changes',
  skip: 'Skip',
  complete: 'Complete handoff',
  fail: 'Fail handoff',
};

/** An operator command's message type, as the page says it is waiting for it. */
const AWAITED_COMMAND: Record<string, string> = {
  ResubmissionRequest: 'Resubmission',
  SkipRequest: 'Skip',
  HandoffCompletedRequest: 'Handoff completion',
  HandoffFailedRequest: 'Handoff failure',
};

type EventState = Pick<EventListItem, 'status' | 'subStatus' | 'messageType'>;

/** Rows an operator may resubmit or skip (the server decides again; this only drives the buttons and checkboxes). */
export const isActionable = (r: Pick<EventListItem, 'status' | 'subStatus'>) =>
  r.status === 'Failed' || r.status === 'DeadLettered' || r.status === 'Unsupported' || isHandoff(r);

/** Waiting on an external system: the handoff can be completed or failed. */
export const isHandoff = (r: Pick<EventListItem, 'status' | 'subStatus'>) => r.status === 'Pending' && r.subStatus === 'Handoff';

/**
 * A Pending row last written by an operator command (the console claimed it and the endpoint has not answered yet):
 * that command, as "Resubmission", "Skip" …; otherwise undefined.
 */
export function awaitedCommand(e: EventState): string | undefined {
  if (e.status !== 'Pending' || e.subStatus !== null || e.messageType === null) return undefined;
  return AWAITED_COMMAND[e.messageType];
}

export function offersCommand(command: EventCommand, e: Pick<EventListItem, 'status' | 'subStatus'>): boolean {
  return command === 'complete' || command === 'fail' ? isHandoff(e) : isActionable(e);
}

/**
 * Why `command` can no longer be taken on the event as it is now, in the words of an open dialog ("This event is now
 * Completed — Resubmit is no longer available."); null while the event still offers it.
 */
export function commandUnavailableReason(command: EventCommand, e: EventState): string | null {
  if (offersCommand(command, e)) return null;
  const awaited = awaitedCommand(e);
  const state = awaited ? `${e.status} (${awaited} sent by an operator)` : e.subStatus ? `${e.status} · ${e.subStatus}` : e.status;
  return `This event is now ${state} — ${COMMAND_BUTTON[command]} is no longer available.`;
}

/** The event as read again after a refusal that said it had changed: what the dialog now acts on. */
export type SeenState = EventState & { messageId: string };

/**
 * What an open dialog says after its command was refused because the event had moved on from the message it was
 * opened on (409 "changed", commandFailure.ts isChangedSinceSeen), once the event has been read again: what it now
 * is, and that confirming again acts on that. Nothing was sent; the operator decides again, on the new state.
 */
export function eventChangedText(command: EventCommand, now: SeenState): string {
  const state = now.subStatus ? `${now.status} · ${now.subStatus}` : now.status;
  const last = now.messageType ? `${now.messageType} ${now.messageId}` : now.messageId;
  const confirm = command === 'edit' ? 'Resubmit edited payload' : COMMAND_BUTTON[command];
  return `The event changed since this dialog opened: it is now ${state}, last message ${last}. Nothing was sent; ${confirm} again acts on the event as it is now.`;
}
