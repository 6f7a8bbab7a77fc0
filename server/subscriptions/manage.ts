// Subscription actions with a typed confirmation: pause / resume (ReceiveDisabled / Active), purge the dead-letter
// queue, restore the rules the catalog's topology expects. The request must carry the subscription's name as
// the operator typed it (`topic/subscription` for a purge); a mismatch is refused before anything changes. Every
// action is audited.
import { auditorFields, type Auditor } from '../manager/commands.ts';
import type { RuleProperties, ServiceBusAdministrationClient, ServiceBusClient } from '@azure/service-bus';
import type { MessageStore } from '../../lib/store/index.ts';
import type { TopologyModel } from '@nimbus/sdk/topology';
import { HttpError, notFound } from '../http.ts';
import { log } from '../log.ts';
import { purgeDeadLetters } from './deadLetters.ts';
import { compareRules, findModel } from './overview.ts';
import { TOPOLOGY_AUDIT_EVENT } from './replay.ts';

export interface SubscriptionRef {
  topic: string;
  subscription: string;
}

/**
 * What the operator types to confirm an action: the subscription's name; for a purge `topic/subscription`, since
 * names like `Resolver` or `Retry` recur on every topic and a purge cannot be undone.
 */
export function confirmationText(ref: SubscriptionRef, action: 'pause' | 'resume' | 'purge' | 'restoreRules'): string {
  return action === 'purge' ? `${ref.topic}/${ref.subscription}` : ref.subscription;
}

export function requireConfirmation(ref: SubscriptionRef, typed: string, action: 'pause' | 'resume' | 'purge' | 'restoreRules' = 'pause'): void {
  const expected = confirmationText(ref, action);
  if (typed === expected) return;
  throw new HttpError(
    400,
    'bad request',
    action === 'purge' ? `type '${expected}' (topic/subscription) exactly to confirm` : `type the subscription name '${expected}' exactly to confirm`,
  );
}

/**
 * Whether the broker said the entity does not exist: the administration client's 404 (`MessageEntityNotFoundError`)
 * or a receiver's `MessagingEntityNotFound` (ServiceBusError), e.g. a peek on a subscription that is not there.
 */
export function isEntityNotFound(err: unknown): boolean {
  const e = err as { statusCode?: number; code?: string } | null | undefined;
  return e?.statusCode === 404 || e?.code === 'MessageEntityNotFoundError' || e?.code === 'MessagingEntityNotFound';
}

const subscriptionNotFound = (ref: SubscriptionRef) => notFound(`subscription ${ref.topic}/${ref.subscription} does not exist`);

/**
 * Runs a broker call on one subscription with the broker's "no such entity" answered as a 404 that names it, not as
 * an internal error: its dead-letter queue is read, purged or replayed by name, and the name comes from the URL.
 */
export async function onSubscription<T>(ref: SubscriptionRef, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isEntityNotFound(err)) throw subscriptionNotFound(ref);
    throw err;
  }
}

/**
 * Whether the subscription (and its topic) exists: false only when the broker says there is no such entity; any
 * other failure is thrown, for the caller to report as it does (the page's own read shows it).
 */
export async function subscriptionExists(admin: ServiceBusAdministrationClient, ref: SubscriptionRef): Promise<boolean> {
  try {
    await admin.getSubscription(ref.topic, ref.subscription);
    return true;
  } catch (err) {
    if (isEntityNotFound(err)) return false;
    throw err;
  }
}

/** 404 unless the subscription exists on the broker (checked before work that would answer 202 first: a replay). */
export async function requireSubscription(admin: ServiceBusAdministrationClient, ref: SubscriptionRef): Promise<void> {
  if (!(await subscriptionExists(admin, ref))) throw subscriptionNotFound(ref);
}

/** The topology's history entry of a change: who by display name and, when known, by stable id (auditorFields). */
async function audit(store: MessageStore, type: string, auditor: Auditor, ref: SubscriptionRef, data: Record<string, unknown>): Promise<void> {
  await store.recordAudit({
    eventId: TOPOLOGY_AUDIT_EVENT,
    type,
    ...auditorFields(auditor),
    comment: `${ref.topic}/${ref.subscription}`,
    data: JSON.stringify({ ...ref, ...data }).slice(0, 4096),
  });
}

/** Pause (ReceiveDisabled) or resume (Active) one subscription; returns the status it now has. */
export async function setReceiving(
  admin: ServiceBusAdministrationClient,
  store: MessageStore,
  ref: SubscriptionRef,
  paused: boolean,
  auditor: Auditor,
): Promise<{ status: string; previous: string }> {
  const sub = await onSubscription(ref, () => admin.getSubscription(ref.topic, ref.subscription));
  const previous = sub.status;
  const status = paused ? 'ReceiveDisabled' : 'Active';
  if (previous !== status) await admin.updateSubscription({ ...sub, status });
  await audit(store, paused ? 'PauseSubscription' : 'ResumeSubscription', auditor, ref, { previous, status });
  log.info({ ...ref, status, previous }, 'subscription status changed');
  return { status, previous };
}

export async function purge(
  client: ServiceBusClient,
  admin: ServiceBusAdministrationClient,
  store: MessageStore,
  ref: SubscriptionRef,
  auditor: Auditor,
): Promise<{ purged: number }> {
  await requireSubscription(admin, ref);
  const purged = await onSubscription(ref, () => purgeDeadLetters(client, ref.topic, ref.subscription));
  await audit(store, 'PurgeDeadLetters', auditor, ref, { purged });
  log.info({ ...ref, purged }, 'dead-letter queue purged');
  return { purged };
}

/** Creates the rules the topology expects and the broker lacks, and replaces those whose SQL differs. */
export async function restoreRules(
  admin: ServiceBusAdministrationClient,
  store: MessageStore,
  model: TopologyModel,
  ref: SubscriptionRef,
  auditor: Auditor,
): Promise<{ restored: string[] }> {
  const wanted = findModel(model, ref.topic, ref.subscription);
  if (!wanted) throw notFound(`subscription ${ref.topic}/${ref.subscription} is not part of the catalog's topology`);
  const rules: RuleProperties[] = [];
  await onSubscription(ref, async () => {
    for await (const r of admin.listRules(ref.topic, ref.subscription)) rules.push(r);
  });
  const { missingRules } = compareRules(rules, wanted);
  const restored: string[] = [];
  for (const r of missingRules) {
    if (r.changed) await admin.deleteRule(ref.topic, ref.subscription, r.name);
    const filter = { sqlExpression: r.filter };
    if (r.action) await admin.createRule(ref.topic, ref.subscription, r.name, filter, { sqlExpression: r.action });
    else await admin.createRule(ref.topic, ref.subscription, r.name, filter);
    restored.push(r.name);
  }
  await audit(store, 'RestoreRules', auditor, ref, { restored });
  log.info({ ...ref, restored }, 'subscription rules restored');
  return { restored };
}
