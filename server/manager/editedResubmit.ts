// An edited resubmit's schema check and audit details, taken from the row the Manager acts on - the one it claims
// (or its own claim, on a repeat), chosen by the Manager itself through ExecuteCaller.checkRow. Shared by the
// resubmit route and the MCP tool. Before, both read the event's NEWEST row (getEvent(..., 1)): for an event id in
// two sessions whose rows differ in type, an edit that broke the resubmitted row's schema was checked against the
// other row's type, accepted and sent, and the audit's diff compared it with the other row's payload
// (editedSchemaRow.test.ts).
import type { Catalog } from '@nimbus/sdk/contract';
import type { StatusRow } from '../../lib/store/index.ts';
import { diffJson } from '../audit/diff.ts';
import { requirePayloadMatchesSchema } from '../payloadSchemaCheck.ts';
import type { ExecuteCaller } from './manager.ts';

export interface EditedPayload {
  payload: unknown;
  eventTypeId?: string | undefined;
}

export interface EditedResubmitCheck {
  /** For Manager.execute: 400 when the edit does not match the catalog schema of the acted row's (or its own) type. */
  caller: ExecuteCaller;
  /** The audit's details once the command ran: the event type change and the payload's structural diff. */
  details(): Record<string, unknown>;
}

/**
 * The check and audit details of a resubmit, `edited` or not (a plain one checks nothing: `{ edited: false }`). An
 * edit that names its event type is checked at once (400 here, before the event is read: bad input whatever the
 * event's state); one that does not, against the acted row's type when the Manager has chosen it.
 */
export function editedResubmitCheck(catalog: Catalog, edited: EditedPayload | undefined): EditedResubmitCheck {
  if (!edited) return { caller: {}, details: () => ({ edited: false }) };
  // The editor checked this too, but only the server's check counts: 400 before anything is claimed or sent.
  if (edited.eventTypeId) requirePayloadMatchesSchema(catalog, edited.eventTypeId, edited.payload);
  let acted: StatusRow | undefined;
  return {
    caller: {
      checkRow: (row) => {
        if (!edited.eventTypeId) requirePayloadMatchesSchema(catalog, row.eventTypeId, edited.payload);
        acted = row;
      },
    },
    details: () => ({
      edited: true,
      eventTypeId: { from: acted?.eventTypeId ?? null, to: edited.eventTypeId ?? acted?.eventTypeId ?? null },
      payloadDiff: diffJson(acted?.payload ?? null, edited.payload),
    }),
  };
}
