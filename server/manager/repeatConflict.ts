// Whether a repeat of a claimed resubmit asks for what the claim sent. The command's MessageId is derived from the
// failure it answers, not from its payload, so a second resubmit of the same failure finds the first one's claim
// whatever it carries: a double click or a script retry (same request: a duplicate, nothing to send), or another
// operator's different edit (not a duplicate: answering 'duplicate' would silently drop that edit). The claimed
// row holds what was sent: its payload and event type are the edit after an edited resubmit (the claim writes
// them) and the stored ones after a plain one (the claim keeps them); the Resolver records the same values later.
import { isDeepStrictEqual } from 'node:util';
import { AuditType, type AuditEntry, type StatusRow } from '../../lib/store/index.ts';
import type { CommandSpec } from './commands.ts';

/**
 * Why this resubmit is not a repeat of the claim on `row` (undefined when it is one). `receipt` is the claim's
 * "sent" audit, when written: its type says whether the claim was an edit; without it the row does (an edited
 * claim stored its payload under its own id, see specOfClaim).
 */
export function resubmitMismatch(spec: Extract<CommandSpec, { kind: 'resubmit' }>, row: StatusRow, receipt: AuditEntry | null | undefined): string | undefined {
  const claimEdited = receipt ? receipt.type === AuditType.ResubmitWithChanges : row.requestMessageId === row.lastMessageId;
  let differs: string | undefined;
  if (spec.edited) {
    // An edit identical to what was sent asks for the same thing, whoever sent it and however.
    const eventTypeId = spec.edited.eventTypeId ?? row.eventTypeId;
    if (eventTypeId !== row.eventTypeId) differs = 'with a different event type';
    else if (!isDeepStrictEqual(spec.edited.payload, row.payload)) differs = claimEdited ? 'with a different payload' : 'with the stored payload, not this edit';
  } else if (claimEdited) {
    // A plain resubmit asks for the stored payload; the claim sent an edit (the row no longer holds the original).
    differs = 'with an edited payload';
  }
  if (!differs) return undefined;
  const sent = receipt ? `was already sent (by ${receipt.auditor} at ${receipt.at}, ${differs})` : `is already being sent (claimed at ${row.updatedAt}, ${differs})`;
  return `a resubmit of this failure ${sent}; nothing was sent - reload the event`;
}
