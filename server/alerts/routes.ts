// The Admin → Alerts API behind app/api/admin/alerts/** and app/api/alerts/history: validated inputs, the alert
// store of the console's context, secrets never in an answer. Changes are audited by the routes (audited()).
import type { ConsoleContext } from '../context.ts';
import { badRequest, notFound } from '../http.ts';
import { AlertStore } from './alertStore.ts';
import { sendTestNotice } from './evaluator.ts';
import { channelView, type ChannelDoc, type ChannelInput, type ChannelView, type RuleDoc, type RuleInput, type RuleStateDoc, type AlertDoc } from './model.ts';
import { readBackgroundSettings } from '../history/background.ts';
import { SecretKeyError } from './secrets.ts';
import { alertNamedEndpoint, alertVisibility } from './readScope.ts';
import type { ChannelChanges } from './channelDestination.ts';
import type { ReadScope } from '../auth/readScope.ts';
import type { Auditor } from '../manager/commands.ts';

const KEY = Symbol.for('nimbus.console.alerts');
type Slot = { ctx?: ConsoleContext; store?: AlertStore };
const slot = ((globalThis as Record<symbol, unknown>)[KEY] ??= {}) as Slot;

export function alertStoreOf(ctx: ConsoleContext): AlertStore {
  if (!slot.store || slot.ctx !== ctx) {
    slot.store = new AlertStore(ctx.store.database);
    slot.ctx = ctx;
  }
  return slot.store;
}

/** A missing or wrong NIMBUS_ALERTS_KEY is the operator's to fix: 400 with the variable's name. */
async function keyed<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof SecretKeyError) throw badRequest(err.message);
    throw err;
  }
}

export interface RuleView extends RuleDoc {
  state: Pick<RuleStateDoc, 'firing' | 'lastFiredAt' | 'suppressed' | 'evaluatedAt' | 'lastStatus' | 'lastDetail'> | null;
}

/**
 * Every rule (its settings name no endpoint's records) with its state; the last evaluation's detail only where the
 * caller may read what it names (readScope.ts: a rule on another endpoint, or a site-wide rule that fired for one).
 */
export async function listRules(ctx: ConsoleContext, scope: ReadScope): Promise<{ rules: RuleView[]; channels: ChannelView[] }> {
  const store = alertStoreOf(ctx);
  const [rules, channels] = await Promise.all([store.listRules(), store.listChannels()]);
  const views = await Promise.all(
    rules.map(async (r): Promise<RuleView> => {
      const { state } = await store.getState(r.id);
      const detail = state && alertVisibility(scope, r.endpointId, state.lastDetailFor) === 'whole' ? { lastDetail: state.lastDetail } : {};
      return {
        ...stripMeta(r),
        state: state
          ? { firing: state.firing, lastFiredAt: state.lastFiredAt, suppressed: state.suppressed, evaluatedAt: state.evaluatedAt, lastStatus: state.lastStatus, ...detail }
          : null,
      };
    }),
  );
  return { rules: views, channels: channels.map((c) => viewOf(store, c)) };
}

/** A channel as the API shows it, flagged with the reason when every send of it is refused for its stored target (model.ts). */
function viewOf(store: AlertStore, d: ChannelDoc): ChannelView {
  const reason = store.refusedAtSend(d);
  return { ...channelView(d), ...(reason !== null ? { insecureUrl: true as const, insecureReason: reason } : {}) };
}

function stripMeta<T extends object>(d: T): T {
  const out = { ...d } as Record<string, unknown>;
  for (const k of Object.keys(out)) if (k.startsWith('_')) delete out[k];
  return out as T;
}

async function checkChannels(ctx: ConsoleContext, ids: string[]): Promise<void> {
  const store = alertStoreOf(ctx);
  for (const id of ids) if (!(await store.getChannel(id))) throw badRequest(`no alert channel ${id}`);
}

export async function createRule(ctx: ConsoleContext, input: RuleInput, user: Auditor): Promise<RuleDoc> {
  await checkChannels(ctx, input.channelIds);
  return stripMeta(await alertStoreOf(ctx).saveRule(input, user));
}

export async function updateRule(ctx: ConsoleContext, id: string, input: RuleInput, user: Auditor): Promise<RuleDoc> {
  await checkChannels(ctx, input.channelIds);
  return stripMeta(await alertStoreOf(ctx).saveRule(input, user, id));
}

export const deleteRule = (ctx: ConsoleContext, id: string) => alertStoreOf(ctx).deleteRule(id);

export async function createChannel(ctx: ConsoleContext, input: ChannelInput, user: Auditor): Promise<ChannelView> {
  const store = alertStoreOf(ctx);
  return keyed(async () => viewOf(store, await store.saveChannel(input, user)));
}

export async function updateChannel(ctx: ConsoleContext, id: string, input: ChannelInput, user: Auditor): Promise<ChannelView> {
  const store = alertStoreOf(ctx);
  return keyed(async () => viewOf(store, await store.saveChannel(input, user, id)));
}

export async function deleteChannel(ctx: ConsoleContext, id: string): Promise<void> {
  const store = alertStoreOf(ctx);
  const users = (await store.listRules()).filter((r) => r.channelIds.includes(id)).map((r) => r.name);
  if (users.length > 0) throw badRequest(`the channel is used by ${users.length} rule(s): ${users.slice(0, 5).join(', ')}`);
  await store.deleteChannel(id);
}

export async function testChannel(ctx: ConsoleContext, id: string): Promise<{ ok: boolean; error?: string }> {
  const result = await keyed(() => sendTestNotice({ alerts: alertStoreOf(ctx), consoleUrl: readBackgroundSettings().consoleUrl }, id));
  if (result === null) throw notFound(`no alert channel ${id}`);
  return result;
}

/** An alert as the history shows it: `summary` and `link` null when withheld from the caller (readScope.ts). */
export type AlertView = Omit<AlertDoc, 'summary' | 'link'> & { summary: string | null; link: string | null };

/**
 * The newest `limit` alerts the caller may see: a per-endpoint caller gets no alert of a rule on another endpoint,
 * and a site-wide rule's alert without its text unless it names none or a readable endpoint.
 */
export async function alertHistory(ctx: ConsoleContext, limit: number, scope: ReadScope): Promise<AlertView[]> {
  const alerts = await alertStoreOf(ctx).listAlerts(limit, scope.all ? undefined : scope.endpointIds);
  return alerts.map((a): AlertView => {
    const view = stripMeta(a);
    // The query left out the hidden ones; a withheld one keeps what fired and when, not what it names.
    if (alertVisibility(scope, a.endpointId, alertNamedEndpoint(a)) === 'whole') return view;
    const { firedFor: _named, ...rest } = view;
    return { ...rest, summary: null, link: null };
  });
}

/**
 * What the audit records of a channel change: never the secrets, only which were given; of an edit also where it
 * moves the channel (`changes`): the non-secret settings changed, old and new, and whether the URL names another
 * server - so an edit that sends notices somewhere new can be found in the log.
 */
export function channelAuditDetails(input: ChannelInput, changes: ChannelChanges | null = null): Record<string, unknown> {
  const given: string[] = [];
  if ('url' in input && input.url !== undefined) given.push('url');
  if ('headers' in input && input.headers !== undefined) given.push('headers');
  if ('password' in input && input.password !== undefined) given.push('password');
  const moved = changes === null ? {} : { settingsChanged: changes.settingsChanged, ...(input.type === 'email' ? {} : { urlOriginChanged: changes.urlOriginChanged }) };
  return { type: input.type, name: input.name, secretsChanged: given, ...moved };
}

/** What an edit changes about the stored channel, for its audit entry; null when there is no such channel. */
export function channelEditChanges(ctx: ConsoleContext, id: string, input: ChannelInput): Promise<ChannelChanges | null> {
  return keyed(() => alertStoreOf(ctx).channelChanges(id, input));
}
