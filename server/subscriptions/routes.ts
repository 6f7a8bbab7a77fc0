// What the Topology route handlers call (app/api/topology/**): request schemas and the glue between the parsed,
// authorized request and the subscription functions. Handlers stay "parse, authorize, call".
import { auditorName, type Auditor } from '../manager/commands.ts';
import { leasesOf, replicaId } from '../leases.ts';
import type { ServiceBusClient } from '@azure/service-bus';
import { z } from 'zod';
import { deriveTopology } from '@nimbus/sdk/topology';
import type { ConsoleContext } from '../context.ts';
import { conflict, HttpError, notFound } from '../http.ts';
import { log } from '../log.ts';
import { getOpsServices } from '../heartbeat/services.ts';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { peekDeadLetters, type DeadLetterPage, type DeadLetterView } from './deadLetters.ts';
import { onSubscription, requireConfirmation, requireSubscription, purge, restoreRules, setReceiving } from './manage.ts';
import { listTopology, type TopicView } from './overview.ts';
import {
  MAX_REPLAY,
  operationDocName,
  operationStateOf,
  REPLAY_LEASE_TTL_MS,
  replayLeaseName,
  previewReplay,
  beginReplay,
  ReplayNotStartedError,
  uncertainEvidence,
  warnedAmong,
  type ReplayOperation,
  type ReplayPreview,
  type StartedReplay,
  type UncertainEvidence,
  type WarnedDeadLetter,
} from './replay.ts';
import { ReplayJournal, type JournalRecord, type JournalVerdict } from './replayJournal.ts';

const entityName = z.string().min(1).max(260).regex(/^[A-Za-z0-9._\-$]+$/, 'entity names are letters, digits, ".", "_", "-" and "$"');
export const subscriptionParams = z.object({ topic: entityName, subscription: entityName });
export const operationParams = z.object({ operationId: z.uuid() });

export const deadLetterQuery = z.object({
  from: z.string().regex(/^\d{1,19}$/, 'from is a sequence number').optional(),
  pageSize: z.coerce.number().int().min(1).max(100).default(25),
  reason: z.string().min(1).max(4096).optional(),
});

export const replaySelection = z
  .object({
    sequenceNumbers: z.array(z.string().regex(/^\d{1,19}$/, 'sequence numbers are digits')).min(1).max(MAX_REPLAY).optional(),
    all: z.boolean().optional(),
    reason: z.string().min(1).max(4096).optional(),
    max: z.number().int().min(1).max(MAX_REPLAY).optional(),
    /** The operator's decision on uncertain dead letters; only for dead letters listed by sequence number. */
    uncertain: z.enum(['resend', 'markDelivered']).optional(),
    /** Replay also the dead letters marked with a `replayWarning` (futile or harmful replayed unchanged); default false. */
    includeWarned: z.boolean().optional(),
  })
  .strict()
  .refine((s) => (s.sequenceNumbers?.length ?? 0) > 0 || s.all === true, 'select dead letters: sequenceNumbers, or all: true (with an optional reason)')
  .refine((s) => s.uncertain === undefined || (s.sequenceNumbers?.length ?? 0) > 0, 'a decision on uncertain dead letters names them one by one (sequenceNumbers), never by filter');

export const subscriptionAction = z
  .object({
    action: z.enum(['pause', 'resume', 'purge', 'restoreRules']),
    /** The subscription's name, typed by the operator; `topic/subscription` for a purge (manage.ts confirmationText). */
    confirm: z.string().max(260),
  })
  .strict();

export async function topologyOverview(ctx: ConsoleContext): Promise<{ topics: TopicView[]; generatedAt: string }> {
  return { topics: await listTopology(ctx.serviceBus.admin, deriveTopology(ctx.catalog)), generatedAt: new Date().toISOString() };
}

// One journal per context: it works on the store's own database handle, so it has nothing to close.
const journals = new WeakMap<ConsoleContext, ReplayJournal>();
export function journalOf(ctx: ConsoleContext): ReplayJournal {
  let j = journals.get(ctx);
  if (!j) {
    j = new ReplayJournal(ctx.store.database);
    journals.set(ctx, j);
  }
  return j;
}

/**
 * The client replays send their copies on, one per context (kept with the ops services, which close it once
 * their running replays have ended), so a single "Resend" click does not open a connection of its own. It never
 * retries a send by itself: a send retried after a timeout could enqueue a second copy behind the journal's back.
 * A failed send is judged by replay.ts instead. Its connection opens on the first send.
 */
export function replaySendClientOf(ctx: ConsoleContext): ServiceBusClient {
  const ops = getOpsServices(ctx);
  ops.replaySend ??= createServiceBusClients(ctx.config.serviceBusConnection, { client: { retryOptions: { maxRetries: 0 } } });
  return ops.replaySend.client;
}

/** A dead letter as the page shows it: with what the replay journal knows of it. */
export type DeadLetterWithReplay = DeadLetterView & {
  replay: { verdict: JournalVerdict; state: JournalRecord['state']; operationId: string; auditor: string; claimedAt: string; sentAt: string | null; evidence: UncertainEvidence | null } | null;
};

/**
 * How many dead letters the queue holds, the broker's count with the time it was read: the page lists 50 at a time,
 * and Purge (and Replay all without a filter) act on all of them. One subscription's runtime properties, not the
 * whole topology's. Null when the count could not be read (the page still lists what it peeked).
 */
export interface DeadLetterTotal {
  deadLetter: number;
  at: string;
}

async function deadLetterTotal(ctx: ConsoleContext, p: z.output<typeof subscriptionParams>): Promise<DeadLetterTotal | null> {
  try {
    const runtime = await ctx.serviceBus.admin.getSubscriptionRuntimeProperties(p.topic, p.subscription);
    return { deadLetter: runtime.deadLetterMessageCount, at: new Date().toISOString() };
  } catch (err) {
    log.warn({ topic: p.topic, subscription: p.subscription, err: err instanceof Error ? err.message : String(err) }, 'dead-letter count could not be read');
    return null;
  }
}

export async function deadLetters(
  ctx: ConsoleContext,
  p: z.output<typeof subscriptionParams>,
  q: z.output<typeof deadLetterQuery>,
): Promise<Omit<DeadLetterPage, 'items'> & { items: DeadLetterWithReplay[]; total: DeadLetterTotal | null }> {
  // A peek on a subscription that is not there can wait for the link instead of failing: ask the broker first.
  await requireSubscription(ctx.serviceBus.admin, p);
  const [page, total] = await Promise.all([onSubscription(p, () => peekDeadLetters(ctx.serviceBus.client, p.topic, p.subscription, q)), deadLetterTotal(ctx, p)]);
  const journal = journalOf(ctx);
  const found = await journal.getMany(page.items.map((v) => ({ topic: p.topic, subscription: p.subscription, sequenceNumber: v.sequenceNumber, messageId: v.messageId })));
  const uncertain = page.items.flatMap((view) => {
    const e = found.get(view.sequenceNumber);
    return e && e.record.state === 'sending' ? [{ view, record: e.record }] : [];
  });
  const evidence = new Map((await uncertainEvidence(getOpsServices(ctx).docs, uncertain)).map((u) => [u.sequenceNumber, u]));
  return {
    ...page,
    total,
    items: page.items.map((v) => {
      const e = found.get(v.sequenceNumber);
      if (!e) return { ...v, replay: null };
      const r = e.record;
      return {
        ...v,
        replay: { verdict: journal.verdictOf(r, v.enqueuedAt), state: r.state, operationId: r.operationId, auditor: r.auditor, claimedAt: r.claimedAt, sentAt: r.sentAt, evidence: evidence.get(v.sequenceNumber) ?? null },
      };
    }),
  };
}

export async function replayPreview(ctx: ConsoleContext, p: z.output<typeof subscriptionParams>, sel: z.output<typeof replaySelection>): Promise<ReplayPreview> {
  await requireSubscription(ctx.serviceBus.admin, p);
  return onSubscription(p, () => previewReplay(ctx.serviceBus.client, ctx.serviceBus.admin, journalOf(ctx), p.topic, p.subscription, sel, getOpsServices(ctx).docs));
}

/**
 * Starts a replay and answers with its operation id once its lease is held and its operation record written, so
 * the first progress read finds it; the work goes on in the background (progress is read with `operation`). When
 * either fails nothing was replayed: a 503 the caller may retry (audited as a failure by the route).
 */
export async function startReplay(
  ctx: ConsoleContext,
  p: z.output<typeof subscriptionParams>,
  sel: z.output<typeof replaySelection>,
  auditor: Auditor,
): Promise<{ operationId: string }> {
  // Checked before the 202: otherwise the replay is accepted and its operation then fails with the broker's text.
  await requireSubscription(ctx.serviceBus.admin, p);
  await refuseWarned(ctx, p, sel);
  const ops = getOpsServices(ctx);
  let started: StartedReplay;
  try {
    started = await beginReplay(
      {
        client: ctx.serviceBus.client,
        sendClient: replaySendClientOf(ctx),
        store: ctx.store,
        journal: journalOf(ctx),
        docs: ops.docs,
        lease: { leases: leasesOf(ctx.store), owner: replicaId() },
      },
      { topic: p.topic, subscription: p.subscription, selection: sel, auditor: auditorName(auditor), ...(typeof auditor === 'string' ? {} : { auditorId: auditor.id }) },
    );
  } catch (err) {
    if (!(err instanceof ReplayNotStartedError)) throw err;
    log.warn({ topic: p.topic, subscription: p.subscription, step: err.step, err: err.message }, 'replay not started');
    throw new HttpError(
      503,
      'unavailable',
      `the replay did not start: its ${err.step === 'lease' ? 'lease could not be taken' : 'operation record could not be written'} (the store did not answer); nothing was replayed, try again`,
    );
  }
  const { operationId } = started;
  const run = started
    .run()
    .catch((err: unknown) => log.error({ operationId, err: err instanceof Error ? err.message : String(err) }, 'replay failed'))
    .finally(() => ops.running.delete(operationId));
  ops.running.set(operationId, run);
  return { operationId };
}

/**
 * A replay that names, one by one, dead letters whose replay is futile or harmful (`replayWarning`) is refused with a
 * 409 that says which and why, unless it says `includeWarned`: the operator picked them, so skipping them silently
 * would read as done. (A replay by filter or of the whole queue skips them and reports them as `skipped`.)
 */
async function refuseWarned(ctx: ConsoleContext, p: z.output<typeof subscriptionParams>, sel: z.output<typeof replaySelection>): Promise<void> {
  if (sel.includeWarned === true || !sel.sequenceNumbers || sel.sequenceNumbers.length === 0) return;
  const listed = sel.sequenceNumbers;
  let warned = await onSubscription(p, () => warnedAmong(ctx.serviceBus.client, p.topic, p.subscription, listed));
  if (warned.length > 0) warned = await wouldSend(ctx, p, warned, sel.uncertain === 'markDelivered');
  if (warned.length === 0) return;
  const named = warned
    .slice(0, 5)
    .map((w) => `#${w.sequenceNumber}${w.event ? ` (event ${w.event.eventId})` : ''}: ${w.warning.text}`)
    .join('; ');
  throw conflict(
    `${warned.length} of the listed dead letters ${warned.length === 1 ? 'is' : 'are'} not replayed, replaying ${warned.length === 1 ? 'it' : 'them'} unchanged is futile: ${named}${warned.length > 5 ? '; …' : ''}. Nothing was replayed; leave ${warned.length === 1 ? 'it' : 'them'} out, or send includeWarned: true to replay anyway`,
    'replay-warned',
  );
}

/**
 * The warned dead letters the request would send, so their warning (a send refused again) stands: not those whose copy
 * the journal records as sent (`sent`: a replay only removes them, as the preview counts them), and under a
 * `markDelivered` decision not those it holds `sending` (removing an uncertain one as delivered sends nothing - the
 * console's "Remove as delivered" was refused with a 409 on it before). One with no claim, or only a record about
 * another dead letter (`done`, or `sent` and claimed before this one was enqueued: replayJournal.ts isAboutAnother,
 * replay.ts replayOne), is replayed as usual (claimed and sent), so its warning stands; the run checks the journal
 * again (runReplay settleWarned).
 */
async function wouldSend(ctx: ConsoleContext, p: z.output<typeof subscriptionParams>, warned: WarnedDeadLetter[], markDelivered: boolean): Promise<WarnedDeadLetter[]> {
  const journal = journalOf(ctx);
  const found = await journal.getMany(warned.map((w) => ({ topic: p.topic, subscription: p.subscription, sequenceNumber: w.sequenceNumber, messageId: w.messageId })));
  return warned.filter((w) => {
    const record = found.get(w.sequenceNumber)?.record;
    if (!record || journal.isAboutAnother(record, w.enqueuedAt)) return true;
    return record.state === 'sending' && !markDelivered;
  });
}

/**
 * An operation's record. A 'running' one is reported 'interrupted' (its process died) when nobody holds its lease
 * and it was not updated for the lease's TTL (whichever console replica asks), or not updated for a minute.
 */
export async function operation(ctx: ConsoleContext, operationId: string): Promise<ReplayOperation & { interrupted: boolean }> {
  const doc = await getOpsServices(ctx).docs.read<ReplayOperation>(operationDocName(operationId));
  if (!doc) throw notFound(`operation ${operationId} is not known`);
  const op = doc.value;
  let interrupted = operationStateOf(op) === 'interrupted';
  if (!interrupted && op.state === 'running' && Date.now() - Date.parse(op.updatedAt) > REPLAY_LEASE_TTL_MS)
    interrupted = (await leasesOf(ctx.store).holder(replayLeaseName(op.id))) === undefined;
  return { ...op, interrupted };
}

export async function subscriptionActionRun(
  ctx: ConsoleContext,
  p: z.output<typeof subscriptionParams>,
  body: z.output<typeof subscriptionAction>,
  auditor: Auditor,
): Promise<unknown> {
  requireConfirmation(p, body.confirm, body.action);
  switch (body.action) {
    case 'pause':
      return setReceiving(ctx.serviceBus.admin, ctx.store, p, true, auditor);
    case 'resume':
      return setReceiving(ctx.serviceBus.admin, ctx.store, p, false, auditor);
    case 'purge':
      return purge(ctx.serviceBus.client, ctx.serviceBus.admin, ctx.store, p, auditor);
    case 'restoreRules':
      return restoreRules(ctx.serviceBus.admin, ctx.store, deriveTopology(ctx.catalog), p, auditor);
  }
}
