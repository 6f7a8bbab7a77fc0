// The idempotent provisioner: makes the broker match a TopologyModel through the Service Bus administration
// client, and reports what it did. A second run with the same model changes nothing.
//
// Drift rules (DESIGN.md §3): a missing entity is created; a rule whose filter or action SQL differs is replaced;
// a subscription whose session flag or forward target differs is recreated (neither can be changed in place);
// rules the model does not list - `$Default` included - are removed, and so are subscriptions the model does not
// list on the topics it owns. Topics are never deleted.
import type {
  CorrelationRuleFilter,
  CreateSubscriptionOptions,
  RuleProperties,
  ServiceBusAdministrationClient,
  SqlRuleFilter,
  SubscriptionProperties,
} from '@azure/service-bus';
import type { RuleModel, SubscriptionModel, TopologyModel } from './model.ts';
import { DEFAULT_RULE_NAME, TRUE_FILTER } from './model.ts';

/** The part of the administration client the provisioner uses. */
export type TopologyAdmin = Pick<
  ServiceBusAdministrationClient,
  | 'getTopic'
  | 'createTopic'
  | 'getSubscription'
  | 'createSubscription'
  | 'deleteSubscription'
  | 'listSubscriptions'
  | 'listRules'
  | 'createRule'
  | 'deleteRule'
>;

export type ChangeKind = 'topic' | 'subscription' | 'rule';

export interface Change {
  kind: ChangeKind;
  /** `topic`, `topic/subscription` or `topic/subscription/rule`. */
  path: string;
  /** Why it changed (for `changed`), e.g. "session flag false → true". */
  reason?: string;
}

export interface ProvisionReport {
  created: Change[];
  changed: Change[];
  removed: Change[];
}

export interface ProvisionOptions {
  /** Compute and report the changes without applying them. */
  dryRun?: boolean;
  /** Settings for subscriptions the provisioner creates (e.g. a short lock duration in tests). */
  subscriptionDefaults?: Pick<CreateSubscriptionOptions, 'lockDuration' | 'maxDeliveryCount' | 'deadLetteringOnFilterEvaluationExceptions'>;
}

export class ProvisioningError extends Error {
  override readonly name = 'ProvisioningError';
}

const DEFAULTS: NonNullable<ProvisionOptions['subscriptionDefaults']> = {
  lockDuration: 'PT30S',
  maxDeliveryCount: 10,
  deadLetteringOnFilterEvaluationExceptions: true,
};

export async function provisionTopology(
  admin: TopologyAdmin,
  model: TopologyModel,
  options: ProvisionOptions = {},
): Promise<ProvisionReport> {
  const report: ProvisionReport = { created: [], changed: [], removed: [] };
  const apply = !options.dryRun;
  const defaults = { ...DEFAULTS, ...options.subscriptionDefaults };

  // Every topic first: forward targets must exist before a subscription can forward to them.
  for (const topic of model.topics) {
    const exists = await step(`reading topic ${topic.name}`, () => found(admin.getTopic(topic.name)));
    if (!exists) {
      // Another replica provisioning at the same moment may win the race: its topic is as good as ours.
      const created = apply ? await step(`creating topic ${topic.name}`, () => unlessExists(admin.createTopic(topic.name))) : true;
      if (created) report.created.push({ kind: 'topic', path: topic.name });
    }
  }

  for (const topic of model.topics) {
    const wanted = new Map(topic.subscriptions.map((s) => [s.name.toLowerCase(), s]));
    const existing = await step(`listing subscriptions of ${topic.name}`, () =>
      collect(admin.listSubscriptions(topic.name)),
    ).catch((error: unknown) => {
      // In a dry run a topic that does not exist yet has nothing to list.
      if (!apply && isNotFound(error)) return [] as SubscriptionProperties[];
      throw error;
    });
    const existingByName = new Map(existing.map((s) => [s.subscriptionName.toLowerCase(), s]));

    for (const sub of existing) {
      if (wanted.has(sub.subscriptionName.toLowerCase())) continue;
      const path = `${topic.name}/${sub.subscriptionName}`;
      if (apply) await step(`removing subscription ${path}`, () => admin.deleteSubscription(topic.name, sub.subscriptionName));
      report.removed.push({ kind: 'subscription', path });
    }

    for (const sub of topic.subscriptions) {
      const path = `${topic.name}/${sub.name}`;
      const current = existingByName.get(sub.name.toLowerCase());
      if (!current) {
        const created = apply ? await step(`creating subscription ${path}`, () => unlessExists(createSubscription(admin, sub, defaults))) : true;
        if (created) report.created.push({ kind: 'subscription', path });
        // A new subscription is created with its first rule as the default rule (so it never accepts everything,
        // not even for a moment); the remaining rules are added below.
        if (apply) await reconcileRules(admin, sub, report);
        else for (const rule of sub.rules.slice(1)) report.created.push({ kind: 'rule', path: `${path}/${rule.name}` });
        continue;
      }
      const drift = subscriptionDrift(current, sub);
      if (drift) {
        if (apply) {
          await step(`recreating subscription ${path}`, async () => {
            await admin.deleteSubscription(topic.name, current.subscriptionName);
            await createSubscription(admin, sub, defaults);
          });
        }
        report.changed.push({ kind: 'subscription', path, reason: drift });
        if (apply) await reconcileRules(admin, sub, report);
        continue;
      }
      await reconcileRules(admin, sub, report, apply);
    }
  }
  return report;
}

/** Brings a subscription's rules in line with the model; returns nothing, records into the report. */
async function reconcileRules(admin: TopologyAdmin, sub: SubscriptionModel, report: ProvisionReport, apply = true): Promise<void> {
  const path = `${sub.topic}/${sub.name}`;
  const rules = await step(`listing rules of ${path}`, () => collect(admin.listRules(sub.topic, sub.name)));
  const wanted = new Map(sub.rules.map((r) => [r.name.toLowerCase(), r]));

  for (const rule of rules) {
    if (wanted.has(rule.name.toLowerCase())) continue;
    if (apply) await step(`removing rule ${path}/${rule.name}`, () => admin.deleteRule(sub.topic, sub.name, rule.name));
    report.removed.push({ kind: 'rule', path: `${path}/${rule.name}` });
  }

  const byName = new Map(rules.map((r) => [r.name.toLowerCase(), r]));
  for (const rule of sub.rules) {
    const rulePath = `${path}/${rule.name}`;
    const current = byName.get(rule.name.toLowerCase());
    if (!current) {
      const created = apply ? await step(`creating rule ${rulePath}`, () => unlessExists(createRule(admin, sub, rule))) : true;
      if (created) report.created.push({ kind: 'rule', path: rulePath });
      continue;
    }
    const drift = ruleDrift(current, rule);
    if (drift) {
      if (apply) {
        await step(`replacing rule ${rulePath}`, async () => {
          await admin.deleteRule(sub.topic, sub.name, current.name);
          await createRule(admin, sub, rule);
        });
      }
      report.changed.push({ kind: 'rule', path: rulePath, reason: drift });
    }
  }
}

function createSubscription(
  admin: TopologyAdmin,
  sub: SubscriptionModel,
  defaults: NonNullable<ProvisionOptions['subscriptionDefaults']>,
) {
  const first = sub.rules[0];
  const options: CreateSubscriptionOptions = {
    ...defaults,
    requiresSession: sub.requiresSession,
    ...(sub.forwardTo ? { forwardTo: sub.forwardTo } : {}),
    // Keeping the broker's own $Default (a true filter) is what "accept everything" means; any other first rule
    // replaces it at creation.
    ...(first && first.name !== DEFAULT_RULE_NAME ? { defaultRuleOptions: ruleOptions(first) } : {}),
  };
  return admin.createSubscription(sub.topic, sub.name, options);
}

function ruleOptions(rule: RuleModel) {
  return {
    name: rule.name,
    filter: { sqlExpression: rule.filter },
    ...(rule.action ? { action: { sqlExpression: rule.action } } : {}),
  };
}

function createRule(admin: TopologyAdmin, sub: SubscriptionModel, rule: RuleModel) {
  const filter = { sqlExpression: rule.filter };
  return rule.action
    ? admin.createRule(sub.topic, sub.name, rule.name, filter, { sqlExpression: rule.action })
    : admin.createRule(sub.topic, sub.name, rule.name, filter);
}

/** Why an existing subscription must be recreated, or undefined when it matches. */
export function subscriptionDrift(current: SubscriptionProperties, wanted: SubscriptionModel): string | undefined {
  const problems: string[] = [];
  if (Boolean(current.requiresSession) !== wanted.requiresSession) {
    problems.push(`session flag ${Boolean(current.requiresSession)} → ${wanted.requiresSession}`);
  }
  const have = forwardTarget(current.forwardTo);
  const want = forwardTarget(wanted.forwardTo);
  if (have !== want) problems.push(`forward target ${have ?? '(none)'} → ${want ?? '(none)'}`);
  return problems.length > 0 ? problems.join(', ') : undefined;
}

/** Why an existing rule must be replaced, or undefined when its filter and action are what the model says. */
export function ruleDrift(current: RuleProperties, wanted: RuleModel): string | undefined {
  const problems: string[] = [];
  const filter = filterSql(current.filter);
  if (normalizeSql(filter) !== normalizeSql(wanted.filter)) problems.push(`filter '${filter ?? '(correlation filter)'}' → '${wanted.filter}'`);
  const action = current.action?.sqlExpression ?? '';
  if (normalizeSql(action) !== normalizeSql(wanted.action ?? '')) problems.push(`action '${action}' → '${wanted.action ?? ''}'`);
  return problems.length > 0 ? problems.join(', ') : undefined;
}

/** The broker reports ForwardTo as a URL (`sb://host/topic`); only the entity name matters, case-insensitively. */
export function forwardTarget(forwardTo: string | undefined | null): string | undefined {
  if (forwardTo == null || forwardTo.trim() === '') return undefined;
  const last = forwardTo.replace(/\/+$/, '').split('/').pop() ?? '';
  return last.toLowerCase() || undefined;
}

function filterSql(filter: SqlRuleFilter | CorrelationRuleFilter | undefined): string | undefined {
  if (filter && 'sqlExpression' in filter && typeof filter.sqlExpression === 'string') return filter.sqlExpression;
  // A TrueFilter may come back without an expression; it means the same as ours.
  if (filter && Object.keys(filter).length === 0) return TRUE_FILTER;
  return undefined;
}

/**
 * Compares SQL as text, forgiving only what cannot change meaning: surrounding whitespace, runs of whitespace
 * and a trailing semicolon. Anything else that differs is drift.
 */
function normalizeSql(sql: string | undefined): string {
  return (sql ?? '').trim().replace(/;\s*$/, '').replace(/\s+/g, ' ');
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

async function found(request: Promise<unknown>): Promise<boolean> {
  try {
    await request;
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

/** Runs a create; false when the entity already exists (409), so concurrent provisioners do not fail each other. */
async function unlessExists(request: Promise<unknown>): Promise<boolean> {
  try {
    await request;
    return true;
  } catch (error) {
    const e = error as { statusCode?: number; code?: string } | null;
    if (e?.statusCode === 409 || e?.code === 'MessageEntityAlreadyExistsError') return false;
    throw error;
  }
}

function isNotFound(error: unknown): boolean {
  const e = error as { statusCode?: number; code?: string } | null;
  return e?.statusCode === 404 || e?.code === 'MessageEntityNotFoundError';
}

/** Runs one broker call, turning a failure into a ProvisioningError that says what was being done. */
async function step<T>(what: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof ProvisioningError) throw error;
    const e = error as { message?: string; statusCode?: number; code?: string };
    const detail = [e.code, e.statusCode].filter((x) => x != null).join(' ');
    throw new ProvisioningError(`provisioning failed while ${what}: ${e.message ?? String(error)}${detail ? ` (${detail})` : ''}`, {
      cause: error,
    });
  }
}

/** Human-readable lines for a report, one per change. */
export function formatReport(report: ProvisionReport): string[] {
  const line = (verb: string, c: Change) => `${verb} ${c.kind} ${c.path}${c.reason ? ` (${c.reason})` : ''}`;
  return [
    ...report.created.map((c) => line('created', c)),
    ...report.changed.map((c) => line('changed', c)),
    ...report.removed.map((c) => line('removed', c)),
  ];
}

export function changeCount(report: ProvisionReport): number {
  return report.created.length + report.changed.length + report.removed.length;
}
