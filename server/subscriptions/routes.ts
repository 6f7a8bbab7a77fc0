// What the Topology route handlers call (app/api/topology/**): request schemas and the glue between the parsed,
// authorized request and the subscription functions. Handlers stay "parse, authorize, call".
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { deriveTopology } from '../../lib/topology/index.ts';
import type { ConsoleContext } from '../context.ts';
import { notFound } from '../http.ts';
import { log } from '../log.ts';
import { getOpsServices } from '../heartbeat/services.ts';
import { peekDeadLetters, type DeadLetterPage } from './deadLetters.ts';
import { requireConfirmation, purge, restoreRules, setReceiving } from './manage.ts';
import { listTopology, type TopicView } from './overview.ts';
import { MAX_REPLAY, operationDocName, previewReplay, replayDeadLetters, type ReplayOperation, type ReplayPreview } from './replay.ts';

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
  })
  .strict()
  .refine((s) => (s.sequenceNumbers?.length ?? 0) > 0 || s.all === true, 'select dead letters: sequenceNumbers, or all: true (with an optional reason)');

export const subscriptionAction = z
  .object({
    action: z.enum(['pause', 'resume', 'purge', 'restoreRules']),
    /** The subscription's name, typed by the operator. */
    confirm: z.string().max(260),
  })
  .strict();

export async function topologyOverview(ctx: ConsoleContext): Promise<{ topics: TopicView[]; generatedAt: string }> {
  return { topics: await listTopology(ctx.serviceBus.admin, deriveTopology(ctx.catalog)), generatedAt: new Date().toISOString() };
}

export function deadLetters(ctx: ConsoleContext, p: z.output<typeof subscriptionParams>, q: z.output<typeof deadLetterQuery>): Promise<DeadLetterPage> {
  return peekDeadLetters(ctx.serviceBus.client, p.topic, p.subscription, q);
}

export function replayPreview(ctx: ConsoleContext, p: z.output<typeof subscriptionParams>, sel: z.output<typeof replaySelection>): Promise<ReplayPreview> {
  return previewReplay(ctx.serviceBus.client, ctx.serviceBus.admin, p.topic, p.subscription, sel);
}

/** Starts a replay in the background and answers with its operation id; progress is read with `operation`. */
export async function startReplay(
  ctx: ConsoleContext,
  p: z.output<typeof subscriptionParams>,
  sel: z.output<typeof replaySelection>,
  auditor: string,
): Promise<{ operationId: string }> {
  const ops = getOpsServices(ctx);
  const operationId = randomUUID();
  const run = replayDeadLetters(
    { client: ctx.serviceBus.client, store: ctx.store, docs: ops.docs },
    { topic: p.topic, subscription: p.subscription, selection: sel, auditor, operationId },
  )
    .catch((err: unknown) => log.error({ operationId, err: err instanceof Error ? err.message : String(err) }, 'replay failed'))
    .finally(() => ops.running.delete(operationId));
  ops.running.set(operationId, run);
  // The operation document exists before the answer, so the first progress read finds it.
  for (let i = 0; i < 50 && !(await ops.docs.read(operationDocName(operationId))); i++) await new Promise((r) => setTimeout(r, 20));
  return { operationId };
}

/** An operation's record; a 'running' one not updated for a minute is reported 'interrupted' (its process died). */
export async function operation(ctx: ConsoleContext, operationId: string): Promise<ReplayOperation & { interrupted: boolean }> {
  const doc = await getOpsServices(ctx).docs.read<ReplayOperation>(operationDocName(operationId));
  if (!doc) throw notFound(`operation ${operationId} is not known`);
  const op = doc.value;
  const interrupted = op.state === 'running' && Date.now() - Date.parse(op.updatedAt) > 60_000;
  return { ...op, interrupted };
}

export async function subscriptionActionRun(
  ctx: ConsoleContext,
  p: z.output<typeof subscriptionParams>,
  body: z.output<typeof subscriptionAction>,
  auditor: string,
): Promise<unknown> {
  requireConfirmation(p, body.confirm);
  switch (body.action) {
    case 'pause':
      return setReceiving(ctx.serviceBus.admin, ctx.store, p, true, auditor);
    case 'resume':
      return setReceiving(ctx.serviceBus.admin, ctx.store, p, false, auditor);
    case 'purge':
      return purge(ctx.serviceBus.client, ctx.store, p, auditor);
    case 'restoreRules':
      return restoreRules(ctx.serviceBus.admin, ctx.store, deriveTopology(ctx.catalog), p, auditor);
  }
}
