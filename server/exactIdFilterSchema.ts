// The zod form of the one rule for the id filters (./exactIdFilters.ts), for the server's schemas that take them:
// the event list route (./queries.ts) and a bulk operation's selection (./operations/selection.ts), so that "select
// all matching" acts on exactly the rows the list shows, and the Flow and Audit routes (./flow.ts,
// ./audit/auditLog.ts), so that an id means the same on every page. Kept apart from the rule itself, which stays free of zod for
// the pages' first-load bundle.
import { z } from 'zod';
import { exactIdProblem, type ExactIdFilter } from './exactIdFilters.ts';

/**
 * A filter on an id, matched exactly, spaces and all: event and session ids are whatever publishers set, and event
 * type ids are matched the same way, so "S1 " is another id than "S1". Empty means no filter (as every filter here);
 * spaces alone and an id longer than any are refused in the words of the one rule (server/exactIdFilters.ts) rather
 * than read as no filter (the whole endpoint).
 */
export const exactIdFilter = (field: ExactIdFilter) =>
  z
    .string()
    .superRefine((v, ctx) => {
      const problem = exactIdProblem(field, v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .transform((v) => v || undefined)
    .optional();
