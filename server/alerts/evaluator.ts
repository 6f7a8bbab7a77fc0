// The alert evaluator: every tick (30 s; NIMBUS_ALERTS_TICK_MS) each enabled rule is evaluated (conditions.ts) and
// its state moves: ok → firing sends a "fired" notice to the rule's channels and opens an alert in the history;
// firing → ok sends a "recovered" notice and closes it. A rule that fires again within its cool-down of the last
// fire is counted as suppressed and sends nothing (a flapping condition pages once). Runs on one console replica
// at a time under the lease `alerts-evaluator` (server/history/leader.ts); on top of that every transition is a
// compare-and-swap on the rule's state document, so even two evaluators in the moment the lease moves send each
// notice once. A rule disabled or deleted while firing has its alert closed and its state removed
// (alertStore.ts closeFiring), without a "recovered" notice; a fire whose rule changed so while it was being sent is
// closed once sent, and each tick closes what a disabled rule still has firing (one disabled before that was done).
import { randomUUID } from 'node:crypto';
import type { LeaseStore } from '../../lib/store/index.ts';
import { startLeaderLoop, type LeaderLoop } from '../history/leader.ts';
import type { AlertStore } from './alertStore.ts';
import { noticeOf, sendNotice, type NoticeKind } from './channels.ts';
import { evaluateRule, type AlertSources } from './conditions.ts';
import type { AlertDoc, Delivery, RuleDoc, RuleStateDoc } from './model.ts';

type Log = { warn(obj: object, msg: string): void; info?(obj: object, msg: string): void };

export const ALERTS_LEASE = 'alerts-evaluator';
export const DEFAULT_TICK_MS = 30_000;

export interface EvaluatorDeps {
  alerts: AlertStore;
  sources: AlertSources;
  /** The console's public address, for the links in notices (NIMBUS_CONSOLE_URL). */
  consoleUrl: string;
  now?: () => Date;
  env?: Record<string, string | undefined>;
  log?: Log;
  sendTimeoutMs?: number;
}

export interface TickResult {
  fired: string[];
  recovered: string[];
  suppressed: string[];
  unavailable: string[];
}

async function deliver(deps: EvaluatorDeps, rule: RuleDoc, alert: AlertDoc, notice: NoticeKind): Promise<Delivery[]> {
  const out: Delivery[] = [];
  for (const channelId of rule.channelIds) {
    const channel = await deps.alerts.getChannel(channelId);
    const at = () => (deps.now?.() ?? new Date()).toISOString();
    if (!channel) {
      out.push({ channelId, notice: notice === 'test' ? 'fired' : notice, ok: false, error: 'the channel no longer exists', at: at() });
      continue;
    }
    const body = noticeOf(alert, notice, deps.consoleUrl);
    let error: string | undefined;
    // One retry after a second: a receiver's brief hiccup should not lose the page.
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await sendNotice(channel, body, { env: deps.env, timeoutMs: deps.sendTimeoutMs });
        error = undefined;
        break;
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
        if (attempt === 0) await new Promise((r) => setTimeout(r, 1000));
      }
    }
    if (error) deps.log?.warn({ ruleId: rule.id, channelId, err: error }, 'alert notice not delivered');
    out.push({ channelId, notice: notice === 'test' ? 'fired' : notice, ok: error === undefined, ...(error ? { error } : {}), at: at() });
  }
  return out;
}

/** One evaluation of every enabled rule (and closing of what a disabled one left firing). Never throws for one rule's failure (logged; the next tick retries). */
export async function evaluateAlerts(deps: EvaluatorDeps, signal?: AbortSignal): Promise<TickResult> {
  const result: TickResult = { fired: [], recovered: [], suppressed: [], unavailable: [] };
  for (const rule of await deps.alerts.listRules()) {
    if (signal?.aborted) break; // the lease is gone: another replica evaluates now
    try {
      if (!rule.enabled) await deps.alerts.closeFiring(rule.id, 'ruleDisabled', deps.now?.() ?? new Date());
      else await evaluateOne(deps, rule, result);
    } catch (err) {
      deps.log?.warn({ ruleId: rule.id, err: err instanceof Error ? err.message : String(err) }, 'alert rule not evaluated');
    }
  }
  return result;
}

async function evaluateOne(deps: EvaluatorDeps, rule: RuleDoc, result: TickResult): Promise<void> {
  const now = deps.now?.() ?? new Date();
  const { state, etag } = await deps.alerts.getState(rule.id);
  const base: RuleStateDoc = state
    ? { id: state.id, kind: 'state', ruleId: rule.id, firing: state.firing, alertId: state.alertId, lastFiredAt: state.lastFiredAt, suppressed: state.suppressed, memory: state.memory, evaluatedAt: state.evaluatedAt }
    : { id: rule.id, kind: 'state', ruleId: rule.id, firing: false, alertId: null, lastFiredAt: null, suppressed: 0, evaluatedAt: now.toISOString() };
  const ev = await evaluateRule(rule, deps.sources, now, base.memory);
  const next: RuleStateDoc = {
    ...base,
    evaluatedAt: now.toISOString(),
    ...(ev.status !== 'unavailable' && ev.memory ? { memory: ev.memory } : {}),
    lastStatus: ev.status,
    lastDetail: (ev.status === 'unavailable' ? ev.reason : ev.status === 'firing' ? ev.summary : `value ${ev.value}`).slice(0, 1000),
    // An unavailable reason or a value names no endpoint's records (heartbeat reasons name endpoints only).
    lastDetailFor: ev.status === 'firing' ? ev.firedFor : null,
  };

  if (ev.status === 'unavailable') {
    result.unavailable.push(rule.id);
    await deps.alerts.casState(next, etag);
    return;
  }
  if (ev.status === 'firing' && !base.firing) {
    const cooling = base.lastFiredAt !== null && now.getTime() - Date.parse(base.lastFiredAt) < rule.cooldownSeconds * 1000;
    if (cooling) {
      // Suppressed: not firing, so no recovery notice will follow either.
      if (await deps.alerts.casState({ ...next, suppressed: base.suppressed + 1 }, etag)) result.suppressed.push(rule.id);
      return;
    }
    const alertId = randomUUID();
    if (!(await deps.alerts.casState({ ...next, firing: true, alertId, lastFiredAt: now.toISOString(), suppressed: 0 }, etag))) return; // another evaluator took it
    const alert: AlertDoc = {
      id: alertId,
      kind: 'alert',
      ruleId: rule.id,
      ruleName: rule.name,
      ruleType: rule.type,
      endpointId: rule.endpointId,
      firedAt: now.toISOString(),
      recoveredAt: null,
      value: ev.value,
      threshold: rule.threshold,
      summary: ev.summary,
      link: ev.link,
      firedFor: ev.firedFor,
      deliveries: [],
    };
    await deps.alerts.putAlert(alert);
    alert.deliveries = await deliver(deps, rule, alert, 'fired');
    await deps.alerts.putAlert(alert);
    result.fired.push(rule.id);
    // The rule disabled or deleted since it was listed: its closeFiring may have run before this fire's state was
    // written (leaving it), found the alert not stored yet, or had its close overwritten by the write above - so
    // the fire is closed here too. Enabled but with another (or no) fire in its state: disabled and enabled again.
    const current = await deps.alerts.getRule(rule.id);
    const reason = current ? 'ruleDisabled' : 'ruleDeleted';
    if (!current?.enabled) await deps.alerts.closeFiring(rule.id, reason, now);
    if (!current?.enabled || (await deps.alerts.getState(rule.id)).state?.alertId !== alertId) await deps.alerts.closeAlert(alertId, reason, now);
    return;
  }
  if (ev.status === 'ok' && base.firing) {
    if (!(await deps.alerts.casState({ ...next, firing: false }, etag))) return;
    const stored = base.alertId ? await deps.alerts.getAlert(base.alertId) : null;
    const alert: AlertDoc = stored ?? {
      // The fire's record was lost (a crash between the state write and the history write): recover it anyway.
      id: base.alertId ?? randomUUID(),
      kind: 'alert',
      ruleId: rule.id,
      ruleName: rule.name,
      ruleType: rule.type,
      endpointId: rule.endpointId,
      firedAt: base.lastFiredAt ?? now.toISOString(),
      recoveredAt: null,
      value: ev.value,
      threshold: rule.threshold,
      summary: `${rule.name}`,
      link: '/alerts',
      firedFor: null,
      deliveries: [],
    };
    alert.recoveredAt = now.toISOString();
    alert.deliveries = [...alert.deliveries, ...(await deliver(deps, rule, alert, 'recovered'))];
    await deps.alerts.putAlert(alert);
    result.recovered.push(rule.id);
    return;
  }
  await deps.alerts.casState(next, etag);
}

/** Sends a test notice through one channel now (Admin → Alerts "Send test"). */
export async function sendTestNotice(deps: Pick<EvaluatorDeps, 'alerts' | 'consoleUrl' | 'env' | 'sendTimeoutMs'>, channelId: string): Promise<{ ok: boolean; error?: string } | null> {
  const channel = await deps.alerts.getChannel(channelId);
  if (!channel) return null;
  const now = new Date().toISOString();
  const alert: AlertDoc = {
    id: `test-${randomUUID()}`,
    kind: 'alert',
    ruleId: 'test',
    ruleName: 'Test notice',
    ruleType: 'resolverLiveness',
    endpointId: null,
    firedAt: now,
    recoveredAt: null,
    value: 0,
    threshold: null,
    summary: 'A test notice from NimBus Console: this channel works.',
    link: '/alerts',
    deliveries: [],
  };
  try {
    await sendNotice(channel, noticeOf(alert, 'test', deps.consoleUrl), { env: deps.env, timeoutMs: deps.sendTimeoutMs });
    return { ok: true };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}

export interface AlertEvaluatorOptions extends EvaluatorDeps {
  leases: LeaseStore;
  everyMs?: number;
  owner?: string;
}

/** The evaluator loop under the lease. Each console replica may start one; one evaluates at a time. */
export function startAlertEvaluator(o: AlertEvaluatorOptions): LeaderLoop {
  return startLeaderLoop({
    leases: o.leases,
    name: ALERTS_LEASE,
    everyMs: o.everyMs ?? DEFAULT_TICK_MS,
    ...(o.owner ? { owner: o.owner } : {}),
    ...(o.log ? { log: o.log } : {}),
    work: async (signal) => {
      await evaluateAlerts(o, signal);
    },
  });
}
