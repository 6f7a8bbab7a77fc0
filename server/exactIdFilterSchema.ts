// The zod form of the one rule for the id filters (./exactIdFilters.ts), for the server's schemas that take them:
// the event list route (./queries.ts) and a bulk operation's selection (./operations/selection.ts), so that "select
// all matching" acts on exactly the rows the list shows, the Flow, Audit and metrics routes (./flow.ts,
// ./audit/auditLog.ts, ./history/metrics.ts) and the Agent API's receive (./agent/schemas.ts), so that an id means
// the same everywhere; and the same rule for an id a command names (`exactIdTarget`: the Agent API's publish, a
// resubmission's event type). Kept apart from the rule itself, which stays free of zod for the pages' first-load
// bundle.
import { z } from 'zod';
import { EXACT_ID_FILTERS, exactIdProblem, exactIdTargetProblem, type ExactIdFilter } from './exactIdFilters.ts';

/** A string refused, in the rule's words, when `problem` names one. */
const ruled = (problem: (value: string) => string | undefined) =>
  z.string().superRefine((v, ctx) => {
    const words = problem(v);
    if (words) ctx.addIssue({ code: 'custom', message: words });
  });

/**
 * A filter on an id, matched exactly, spaces and all: event and session ids are whatever publishers set, and event
 * type ids are matched the same way, so "S1 " is another id than "S1". Empty means no filter (as every filter here);
 * spaces alone and an id longer than any are refused in the words of the one rule (server/exactIdFilters.ts) rather
 * than read as no filter (the whole endpoint).
 */
export const exactIdFilter = (field: ExactIdFilter) =>
  ruled((v) => exactIdProblem(field, v))
    .transform((v) => v || undefined)
    .optional();

/**
 * An id a command names (an event type to publish or resubmit as, a session to publish into), taken exactly as sent:
 * " S1" is sent as " S1", not trimmed into "S1". Required where it is used (add `.optional()` for a field that may be
 * left out); empty, spaces alone and an id longer than any are refused in the rule's words (exactIdTargetProblem).
 */
export const exactIdTarget = (field: ExactIdFilter) =>
  // The lengths as JSON Schema keywords too: the MCP tools advertise their input schemas (z.toJSONSchema), and a
  // refinement alone shows a client nothing of the limits the rule enforces.
  ruled((v) => exactIdTargetProblem(field, v)).meta({ minLength: 1, maxLength: EXACT_ID_FILTERS[field].max });
