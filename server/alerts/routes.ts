// The Admin → Alerts API behind app/api/admin/alerts/** and app/api/alerts/history: validated inputs, the alert
// store of the console's context, secrets never in an answer. Changes are audited by the routes (audited()).
import type { ConsoleContext } from '../context.ts';
import { badRequest, notFound } from '../http.ts';
import { AlertStore } from './alertStore.ts';
import { sendTestNotice } from './evaluator.ts';
import { channelView, type ChannelInput, type ChannelView, type RuleDoc, type RuleInput, type RuleStateDoc, type AlertDoc } from './model.ts';
import { readBackgroundSettings } from '../history/background.ts';
import { SecretKeyError } from './secrets.ts';

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

export async function listRules(ctx: ConsoleContext): Promise<{ rules: RuleView[]; channels: ChannelView[] }> {
  const store = alertStoreOf(ctx);
  const [rules, channels] = await Promise.all([store.listRules(), store.listChannels()]);
  const views = await Promise.all(
    rules.map(async (r): Promise<RuleView> => {
      const { state } = await store.getState(r.id);
      return {
        ...stripMeta(r),
        state: state
          ? { firing: state.firing, lastFiredAt: state.lastFiredAt, suppressed: state.suppressed, evaluatedAt: state.evaluatedAt, lastStatus: state.lastStatus, lastDetail: state.lastDetail }
          : null,
      };
    }),
  );
  return { rules: views, channels: channels.map(channelView) };
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

export async function createRule(ctx: ConsoleContext, input: RuleInput, user: string): Promise<RuleDoc> {
  await checkChannels(ctx, input.channelIds);
  return stripMeta(await alertStoreOf(ctx).saveRule(input, user));
}

export async function updateRule(ctx: ConsoleContext, id: string, input: RuleInput, user: string): Promise<RuleDoc> {
  await checkChannels(ctx, input.channelIds);
  return stripMeta(await alertStoreOf(ctx).saveRule(input, user, id));
}

export const deleteRule = (ctx: ConsoleContext, id: string) => alertStoreOf(ctx).deleteRule(id);

export async function createChannel(ctx: ConsoleContext, input: ChannelInput, user: string): Promise<ChannelView> {
  return channelView(await keyed(() => alertStoreOf(ctx).saveChannel(input, user)));
}

export async function updateChannel(ctx: ConsoleContext, id: string, input: ChannelInput, user: string): Promise<ChannelView> {
  return channelView(await keyed(() => alertStoreOf(ctx).saveChannel(input, user, id)));
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

export async function alertHistory(ctx: ConsoleContext, limit: number): Promise<AlertDoc[]> {
  return (await alertStoreOf(ctx).listAlerts(limit)).map(stripMeta);
}

/** What the audit records of a channel change: never the secrets, only which were given. */
export function channelAuditDetails(input: ChannelInput): Record<string, unknown> {
  const given: string[] = [];
  if ('url' in input && input.url !== undefined) given.push('url');
  if ('headers' in input && input.headers !== undefined) given.push('headers');
  if ('password' in input && input.password !== undefined) given.push('password');
  return { type: input.type, name: input.name, secretsChanged: given };
}
