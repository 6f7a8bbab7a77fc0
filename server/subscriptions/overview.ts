// Topology → Subscriptions: every topic of the namespace with its subscriptions, their runtime counts (from the
// admin client's runtime properties) and their rules compared with what the catalog's topology expects.
import type { RuleProperties, ServiceBusAdministrationClient } from '@azure/service-bus';
import { forwardTarget, ruleDrift, type SubscriptionModel, type TopologyModel } from '@nimbus/sdk/topology';

export interface RuleView {
  name: string;
  filter: string | null;
  action: string | null;
}

export interface SubscriptionView {
  topic: string;
  name: string;
  status: string;
  requiresSession: boolean;
  forwardTo: string | null;
  maxDeliveryCount: number;
  counts: { active: number; deadLetter: number; transferDeadLetter: number; transfer: number; scheduled: number; total: number };
  rules: RuleView[];
  /** Rules the topology expects that the broker lacks (or holds with other SQL: `changed`). */
  missingRules: Array<{ name: string; filter: string; action: string | null; changed?: string }>;
  /** Rules on the broker the topology does not list. */
  extraRules: string[];
  /** False for a subscription the catalog's topology does not know (rules are then not compared). */
  inTopology: boolean;
  purpose: string | null;
}

export interface TopicView {
  name: string;
  status: string;
  kind: 'endpoint' | 'platform' | 'unknown';
  subscriptions: SubscriptionView[];
}

export function ruleFilterSql(rule: RuleProperties): string | null {
  const f = rule.filter as unknown as Record<string, unknown> | undefined;
  if (f && typeof f.sqlExpression === 'string') return f.sqlExpression;
  if (f && Object.keys(f).length === 0) return '1=1';
  return f ? '(correlation filter)' : null;
}

export function compareRules(
  rules: RuleProperties[],
  wanted: SubscriptionModel | undefined,
): Pick<SubscriptionView, 'missingRules' | 'extraRules'> {
  if (!wanted) return { missingRules: [], extraRules: [] };
  const byName = new Map(rules.map((r) => [r.name.toLowerCase(), r]));
  const missingRules: SubscriptionView['missingRules'] = [];
  for (const w of wanted.rules) {
    const have = byName.get(w.name.toLowerCase());
    const entry = { name: w.name, filter: w.filter, action: w.action ?? null };
    if (!have) missingRules.push(entry);
    else {
      const drift = ruleDrift(have, w);
      if (drift) missingRules.push({ ...entry, changed: drift });
    }
  }
  const wantedNames = new Set(wanted.rules.map((r) => r.name.toLowerCase()));
  const extraRules = rules.filter((r) => !wantedNames.has(r.name.toLowerCase())).map((r) => r.name);
  return { missingRules, extraRules };
}

export function findModel(model: TopologyModel, topic: string, subscription: string): SubscriptionModel | undefined {
  const t = model.topics.find((x) => x.name.toLowerCase() === topic.toLowerCase());
  return t?.subscriptions.find((s) => s.name.toLowerCase() === subscription.toLowerCase());
}

async function listAll<T>(iter: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of iter) out.push(x);
  return out;
}

/** The whole namespace as the Subscriptions page shows it. A few topics at a time: the admin plane is HTTP. */
export async function listTopology(admin: ServiceBusAdministrationClient, model: TopologyModel): Promise<TopicView[]> {
  const topics = await listAll(admin.listTopics());
  const views: TopicView[] = new Array(topics.length);
  let next = 0;
  const worker = async () => {
    while (next < topics.length) {
      const i = next++;
      const t = topics[i]!;
      const [subs, runtime, topicRuntime] = await Promise.all([
        listAll(admin.listSubscriptions(t.name)),
        listAll(admin.listSubscriptionsRuntimeProperties(t.name)),
        admin.getTopicRuntimeProperties(t.name).catch(() => undefined),
      ]);
      const topicScheduled = topicRuntime?.scheduledMessageCount ?? 0;
      const rt = new Map(runtime.map((r) => [r.subscriptionName, r]));
      const subViews = await Promise.all(
        subs.map(async (s): Promise<SubscriptionView> => {
          const rules = await listAll(admin.listRules(t.name, s.subscriptionName));
          const r = rt.get(s.subscriptionName);
          const wanted = findModel(model, t.name, s.subscriptionName);
          return {
            topic: t.name,
            name: s.subscriptionName,
            status: s.status,
            requiresSession: Boolean(s.requiresSession),
            forwardTo: forwardTarget(s.forwardTo) ?? null,
            maxDeliveryCount: s.maxDeliveryCount,
            counts: {
              active: r?.activeMessageCount ?? 0,
              deadLetter: r?.deadLetterMessageCount ?? 0,
              transferDeadLetter: r?.transferDeadLetterMessageCount ?? 0,
              // Azure reports scheduled counts per topic, not per subscription: the topic's count is shown.
              scheduled: topicScheduled,
              transfer: r?.transferMessageCount ?? 0,
              total: r?.totalMessageCount ?? 0,
            },
            rules: rules.map((x) => ({ name: x.name, filter: ruleFilterSql(x), action: x.action?.sqlExpression ?? null })),
            ...compareRules(rules, wanted),
            inTopology: wanted !== undefined,
            purpose: wanted?.purpose ?? null,
          };
        }),
      );
      const kind = model.topics.find((x) => x.name.toLowerCase() === t.name.toLowerCase())?.kind ?? 'unknown';
      views[i] = { name: t.name, status: t.status, kind, subscriptions: subViews.sort((a, b) => a.name.localeCompare(b.name)) };
    }
  };
  await Promise.all(Array.from({ length: Math.min(4, topics.length) }, worker));
  return views.sort((a, b) => a.name.localeCompare(b.name));
}
