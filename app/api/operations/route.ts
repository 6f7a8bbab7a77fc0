// GET /api/operations: recent bulk jobs and dead-letter replays the caller may read. Any role.
// POST with `{ kind: 'resubmit' | 'skip', selection, hold? }`: freezes the selection and starts a job → 202
// `{ operationId, total, state }`. With `hold` the job is only prepared (state `prepared`, audited as
// `{kind}.prepare`): it waits, unlisted, for /resume (the operator confirmed the exact count) or /cancel, and is
// discarded if neither comes within PREPARED_TTL_MS; only its preparer may confirm or cancel it (an Owner may
// cancel it too). The held answer also names `previous`: the newest earlier job that covered the same events, or
// null (server/operations/previousJob.ts). Both answers also name the `endpoints` of the rows frozen and those
// `leftOut`. The caller needs the kind's role (Operator) on the endpoint a selection names (403 otherwise); a
// failure group's selection, which names none, acts on the endpoints where the caller has it, and the endpoints it
// may only read are left out, each with its count and why (server/operations/actableRows.ts); the audit entry names
// only their ids. Refused input is audited under the kind the body asked for (`resubmit|skip` when it names none).
import { grantedAuthority } from '../../../server/operations/authority.ts';
import { listGrants } from '../../../server/auth/grants.ts';
import { requiredRole } from '../../../server/auth/roles.ts';
import { z } from 'zod';
import { audited, authorize, type Authorized, authorizeBeforeBody, authorizeEach, limitRate, nameRefusedInput, readScope } from '../../../server/auth/authorize.ts';
import { HEAVY_READ_COST } from '../../../server/auth/rateLimit.ts';
import { principalKey } from '../../../server/auth/principal.ts';
import { getContext, type ConsoleContext } from '../../../server/context.ts';
import { badRequest, handle, json, parseOr400, readJsonBody } from '../../../server/http.ts';
import { actableOn } from '../../../server/operations/actableRows.ts';
import { ANY_JOB_KIND } from '../../../server/operations/authorizeControl.ts';
import { askedJobKind, createOperationBody, UNREAD_JOB_KIND, type Job, type JobKind } from '../../../server/operations/jobs.ts';
import { freezeActable, type SelectedRow, type Selection } from '../../../server/operations/selection.ts';
import { createOperation, listOperations, parseSelection, resolveSelection } from '../../../server/operations/routes.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const who = await authorize(request, 'read');
    return json(await listOperations(await getContext(), readScope(who)));
  });
}

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    // Who may resubmit or skip nowhere is refused before the body (and the selection query) costs anything,
    // audited under either kind's name: the body is not read yet.
    const caller = await authorizeBeforeBody(request, ANY_JOB_KIND, undefined, {}, UNREAD_JOB_KIND);
    const raw = await readJsonBody(request, z.unknown());
    // Input refused from here on is audited under the kind the body asked for, when it names one (a refused skip
    // job was audited as `resubmit`).
    const asked = askedJobKind(raw);
    if (asked !== undefined) nameRefusedInput(caller, asked);
    const body = parseOr400(createOperationBody, raw, 'body');
    const selection = parseSelection(body.selection);
    const ctx = await getContext();
    // Frozen under the caller's read scope, then every endpoint it acts on authorized for the action.
    const first = await authorize(request, 'read', selection.endpointId);
    // The freeze reads up to 100,000 rows: charged before it runs, at a scan's cost, under the job's name (a 429 is
    // audited as the resubmit or skip refused). Before, only the job counted, after the freeze had run - a caller
    // could freeze selections back to back, each refused or not, and keep the store busy.
    await limitRate({ ...first, action: body.kind }, HEAVY_READ_COST);
    // A group's selection spans every endpoint the caller may act on: rows on endpoints it may only read are left
    // out while freezing (the selection's limit counts only the rows kept) and said so. When none is left,
    // authorizeEach below refuses (403, audited) on the first endpoint, as an endpoint the selection names is refused.
    const { rows, leftOut, endpoints } = selection.endpointId === undefined
      ? await freezeGroup(ctx, selection, body.kind, first)
      : await resolveSelection(ctx, selection, readScope(first)).then((r) => ({ rows: r, leftOut: [], endpoints: endpointsOf(r) }));
    // Every endpoint authorized; the job was charged once already, with its freeze.
    const who = (await authorizeEach(request, body.kind, endpoints, {}, true)) ?? first;
    // What the runner re-checks before each lot: the grants the role rests on, where no claim gives it (authority.ts).
    const authority = grantedAuthority(who.assignments, await listGrants(ctx.store.database), requiredRole(body.kind), endpoints);
    // A held job is prepared, not started: its entry says so, and its confirmation or cancellation follows.
    const { answer } = await audited(
      who,
      () => createOperation(ctx, body.kind, selection, rows, { name: who.user, principalId: principalKey(who.principal), authority }, body.hold, readScope(first)),
      // Only the ids of the endpoints left out: the entry is read by the readers of the endpoints acted on, and a count
      // (or the preparer's role) on another endpoint is not theirs to see (/api/failure-groups scopes it away).
      ({ answer: r, job }) => ({ operationId: r.operationId, kind: body.kind, selection, total: r.total, endpoints, leftOut: leftOut.map((l) => l.endpointId), held: body.hold, ...partsOf(job) }),
      202,
      body.hold ? { action: `${body.kind}.prepare` } : {},
    );
    // The confirmation names the endpoints from the rows frozen, not from the page's list (which may be windowed).
    return json({ ...answer, endpoints, leftOut }, 202);
  });
}

const endpointsOf = (rows: readonly SelectedRow[]) => [...new Set(rows.map((r) => r.endpointId))].sort();

/**
 * A job over several endpoints: each one's count, for a reader of one of them (server/audit/readerScope.ts), as
 * JobStore.create counted them from the rows (absent for one endpoint). Nothing is done yet, so the total alone.
 */
function partsOf(job: Pick<Job, 'byEndpoint'>) {
  return job.byEndpoint ? { byEndpoint: Object.fromEntries(Object.entries(job.byEndpoint).map(([e, part]) => [e, { total: part.total }])) } : {};
}

/**
 * A failure group's rows where the caller may take `kind`, and the endpoints it may only read, each with its count
 * and why. With nothing to act on, the job's endpoints are those left out, for authorizeEach to refuse.
 */
async function freezeGroup(ctx: ConsoleContext, selection: Selection, kind: JobKind, who: Authorized) {
  const actable = actableOn(kind, who);
  const frozen = await freezeActable(ctx.store, selection, readScope(who), { keep: actable.keep, endpoints: ctx.catalog.endpoints.map((e) => e.id) });
  if (frozen.rows.length === 0 && frozen.dropped.size === 0) throw badRequest('the selection matches no events that can be resubmitted or skipped');
  const leftOut = frozen.rows.length > 0 ? actable.leftOut(frozen.dropped) : [];
  const endpoints = frozen.rows.length > 0 ? endpointsOf(frozen.rows) : [...frozen.dropped.keys()].sort();
  return { rows: frozen.rows, leftOut, endpoints };
}
