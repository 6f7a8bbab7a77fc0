// The bus rights model: which identity needs which Service Bus right (Send, Listen, Manage) on which entity,
// derived from the topology model, so a deployment grants exactly that and nothing more (docs/deploy.md).
//
// The rights follow from what the rules do. A subscription whose action stamps `From = 'Manager'` and forwards to
// an endpoint turns anything sent to its topic into an operator command for that endpoint: Send on such a topic
// (today `Manager`) lets the sender skip or resubmit any endpoint's events. It is therefore operator-level and held
// by the console alone; handoff agents settle through the console's HTTP API instead and get no bus right at all.
import { Address, Prop, Topic } from '../contract/properties.ts';
import type { RuleModel, SubscriptionModel, TopicModel, TopologyModel } from './model.ts';

export type BusRight = 'Send' | 'Listen' | 'Manage';

export type RightsEntity =
  | { kind: 'namespace' }
  /** A topic; Listen on a topic covers every subscription of it (and their dead-letter queues). */
  | { kind: 'topic'; topic: string }
  | { kind: 'subscription'; topic: string; subscription: string };

export interface RightGrant {
  right: BusRight;
  entity: RightsEntity;
  /** What the identity does with it. */
  why: string;
  /** Send on a topic whose rules stamp `From = 'Manager'`: lets the holder skip or resubmit events. */
  operatorLevel?: true;
  /** Already contained in another grant of the same identity (Manage on the namespace holds every right). */
  heldBy?: string;
}

export type IdentityRole = 'console' | 'provisioner' | 'resolver' | 'endpoint-host' | 'handoff-agent';

export interface IdentityRights {
  /** Stable id: `console`, `provisioner`, `resolver`, `host:{E}`, `agent:{E}`. */
  id: string;
  role: IdentityRole;
  endpointId?: string;
  description: string;
  /** Service Bus rights; empty for handoff agents. */
  bus: RightGrant[];
  /** What the identity needs on the console's HTTP API instead, if anything. */
  http?: string;
}

export interface OperatorTopic {
  topic: string;
  /** Endpoints on which Send on this topic acts as the operator. */
  endpoints: string[];
}

export interface RightsModel {
  identities: IdentityRights[];
  /** Topics whose Send right is operator-level. */
  operatorTopics: OperatorTopic[];
}

const MANAGE_NAMESPACE = 'Manage on the namespace';
const stampsManager = `SET user.${Prop.From} = '${Address.Manager}'`;

/** A rule whose action makes what it matches look like an operator command. */
function stampsOperatorAuthority(rule: RuleModel): boolean {
  return rule.action?.split(';').some((part) => part.trim() === stampsManager) ?? false;
}

/** Topics where a sender's message is forwarded to an endpoint stamped `From = 'Manager'`. */
export function operatorTopics(model: TopologyModel): OperatorTopic[] {
  const endpointTopics = new Set(model.topics.filter((t) => t.kind === 'endpoint').map((t) => t.name));
  const found: OperatorTopic[] = [];
  for (const topic of model.topics) {
    const endpoints = topic.subscriptions
      .filter((s) => s.forwardTo !== undefined && endpointTopics.has(s.forwardTo) && s.rules.some(stampsOperatorAuthority))
      .map((s) => s.forwardTo!);
    if (endpoints.length > 0) found.push({ topic: topic.name, endpoints: [...new Set(endpoints)] });
  }
  return found;
}

/** Subscriptions a process receives from: the broker forwards everything else on its own. */
const receivedFrom = (topic: TopicModel): SubscriptionModel[] => topic.subscriptions.filter((s) => s.forwardTo === undefined);

const topicEntity = (topic: string): RightsEntity => ({ kind: 'topic', topic });

export function deriveRights(model: TopologyModel): RightsModel {
  const operator = operatorTopics(model);
  const operatorNames = new Set(operator.map((o) => o.topic));
  const endpointTopics = model.topics.filter((t) => t.kind === 'endpoint');
  const resolverTopic = model.topics.find((t) => t.name === Topic.Resolver);

  const console: IdentityRights = {
    id: 'console',
    role: 'console',
    description: 'the operator console: Manager commands, heartbeat probes, dead-letter replay, Topology pages',
    bus: [
      {
        right: 'Manage',
        entity: { kind: 'namespace' },
        why: 'Topology pages, subscription pause/resume/purge/restore rules, readiness (administration plane); holds every right below',
      },
      ...operator.map(
        (o): RightGrant => ({
          right: 'Send',
          entity: topicEntity(o.topic),
          why: 'resubmit, skip and handoff settlement commands, stamped From = Manager',
          operatorLevel: true,
          heldBy: MANAGE_NAMESPACE,
        }),
      ),
      ...endpointTopics.map(
        (t): RightGrant => ({ right: 'Send', entity: topicEntity(t.name), why: 'heartbeat probes, dead-letter replay', heldBy: MANAGE_NAMESPACE }),
      ),
      ...(resolverTopic
        ? [{ right: 'Send', entity: topicEntity(resolverTopic.name), why: 'dead-letter replay', heldBy: MANAGE_NAMESPACE } satisfies RightGrant]
        : []),
      ...model.topics.map(
        (t): RightGrant => ({
          right: 'Listen',
          entity: topicEntity(t.name),
          why: 'dead-letter list, replay and purge of its subscriptions',
          heldBy: MANAGE_NAMESPACE,
        }),
      ),
    ],
  };

  const provisioner: IdentityRights = {
    id: 'provisioner',
    role: 'provisioner',
    description: '`npm run provision` at deploy time (may be the console identity or a deployment pipeline)',
    bus: [{ right: 'Manage', entity: { kind: 'namespace' }, why: 'creates and updates topics, subscriptions and rules' }],
  };

  const resolver: IdentityRights = {
    id: 'resolver',
    role: 'resolver',
    description: 'the Resolver worker',
    bus: resolverTopic
      ? [
          ...receivedFrom(resolverTopic).map(
            (s): RightGrant => ({ right: 'Listen', entity: { kind: 'subscription', topic: s.topic, subscription: s.name }, why: s.purpose }),
          ),
          { right: 'Send', entity: topicEntity(resolverTopic.name), why: 'reschedules a message it could not record yet' },
        ]
      : [],
  };

  const hosts = endpointTopics.map(
    (t): IdentityRights => ({
      id: `host:${t.name}`,
      role: 'endpoint-host',
      endpointId: t.name,
      description: `the host of ${t.name} (SDK subscriber host, deferred processor, publisher)`,
      bus: [
        {
          right: 'Send',
          entity: topicEntity(t.name),
          why: 'publishes events; sends responses, retries, parked messages, replay triggers (its own topic routes them all); acts as this endpoint',
        },
        ...receivedFrom(t).map(
          (s): RightGrant => ({ right: 'Listen', entity: { kind: 'subscription', topic: s.topic, subscription: s.name }, why: s.purpose }),
        ),
      ],
    }),
  );

  const agents = endpointTopics.map(
    (t): IdentityRights => ({
      id: `agent:${t.name}`,
      role: 'handoff-agent',
      endpointId: t.name,
      description: `a handoff agent of ${t.name} (settles its pending handoffs)`,
      bus: [],
      http: `POST /api/event/handoff/{complete,fail}/${t.name}/… with a service principal's bearer token mapped to Operator on ${t.name}`,
    }),
  );

  const identities = [console, provisioner, resolver, ...hosts, ...agents];
  const platformNames = new Set(model.topics.filter((t) => t.kind === 'platform').map((t) => t.name));
  assertOperatorLevelHeldByConsoleOnly(identities, operatorNames, platformNames);
  return { identities, operatorTopics: operator };
}

/**
 * The model's own invariants: nobody but the console (and the provisioner through Manage) can send onto a topic that
 * stamps operator authority, and no endpoint host or agent can send onto a platform topic (the Resolver topic takes
 * From as the sender wrote it, so Send there would let one endpoint write another's history). A topology change
 * that would hand either out fails here, in the unit tests, not in production.
 */
function assertOperatorLevelHeldByConsoleOnly(identities: IdentityRights[], operatorNames: Set<string>, platformNames: Set<string>): void {
  for (const identity of identities) {
    if (identity.role === 'console' || identity.role === 'provisioner') continue;
    for (const g of identity.bus) {
      const topic = g.entity.kind === 'namespace' ? undefined : g.entity.topic;
      if (g.right === 'Manage' || (g.right === 'Send' && topic !== undefined && operatorNames.has(topic)))
        throw new Error(`rights model: ${identity.id} would get ${g.right} on ${entityName(g.entity)}, an operator-level right`);
      if (identity.role !== 'resolver' && g.right === 'Send' && topic !== undefined && platformNames.has(topic))
        throw new Error(`rights model: ${identity.id} would get Send on ${entityName(g.entity)}, a platform topic`);
    }
  }
}

export function entityName(e: RightsEntity): string {
  switch (e.kind) {
    case 'namespace':
      return 'namespace';
    case 'topic':
      return `topic ${e.topic}`;
    case 'subscription':
      return `subscription ${e.topic}/${e.subscription}`;
  }
}

/** The printout of `npm run provision`: one block per identity, then the operator-level rights. */
export function formatRights(rights: RightsModel): string[] {
  const lines: string[] = ['Rights on the bus (derived from the topology; docs/deploy.md maps them to Azure RBAC roles):'];
  for (const identity of rights.identities) {
    lines.push('', `${identity.id}: ${identity.description}`);
    if (identity.bus.length === 0) lines.push('  (no right on the bus)');
    for (const group of groupTopicGrants(identity.bus)) {
      const g = group[0]!;
      const notes = [g.operatorLevel ? 'OPERATOR-LEVEL' : undefined, g.heldBy ? `within ${g.heldBy}` : undefined].filter(Boolean);
      const where =
        group.length === 1 ? entityName(g.entity) : `topics ${group.map((x) => (x.entity as { topic: string }).topic).join(', ')}`;
      lines.push(`  ${g.right.padEnd(6)}  ${where}: ${g.why}${notes.length ? ` [${notes.join('; ')}]` : ''}`);
    }
    if (identity.http) lines.push(`  HTTP    ${identity.http}`);
  }
  for (const o of rights.operatorTopics) {
    lines.push(
      '',
      `Send on topic ${o.topic} is operator-level: its subscriptions stamp From = '${Address.Manager}' on anything addressed to ` +
        `${o.endpoints.length === 1 ? o.endpoints[0] : `any of ${o.endpoints.length} endpoints`}, so whoever can send there can ` +
        `skip or resubmit their events. Only the console's identity may hold it (and Manage, which contains it).`,
    );
  }
  return lines;
}

/** Consecutive topic grants that differ only in the topic print as one line. */
function groupTopicGrants(grants: RightGrant[]): RightGrant[][] {
  const groups: RightGrant[][] = [];
  const key = (g: RightGrant) => `${g.right}|${g.why}|${g.operatorLevel ?? ''}|${g.heldBy ?? ''}`;
  for (const g of grants) {
    const last = groups.at(-1);
    if (last && g.entity.kind === 'topic' && last[0]!.entity.kind === 'topic' && key(last[0]!) === key(g)) last.push(g);
    else groups.push([g]);
  }
  return groups;
}

/** Azure's built-in data roles for each right. */
export const AZURE_ROLE: Record<BusRight, string> = {
  Send: 'Azure Service Bus Data Sender',
  Listen: 'Azure Service Bus Data Receiver',
  Manage: 'Azure Service Bus Data Owner',
};

/** `host:billing-endpoint` → `HOST_BILLING_ENDPOINT_PRINCIPAL_ID`. */
export function principalVariable(identityId: string): string {
  return `${identityId.replace(/[^A-Za-z0-9]+/g, '_').toUpperCase()}_PRINCIPAL_ID`;
}

function scopeOf(e: RightsEntity): string {
  switch (e.kind) {
    case 'namespace':
      return '$SB_NAMESPACE_ID';
    case 'topic':
      return `$SB_NAMESPACE_ID/topics/${e.topic}`;
    case 'subscription':
      return `$SB_NAMESPACE_ID/topics/${e.topic}/subscriptions/${e.subscription}`;
  }
}

/**
 * `az role assignment create` lines for every right not already held through another (a shell fragment: the
 * namespace's resource id in SB_NAMESPACE_ID, each identity's object id in its *_PRINCIPAL_ID variable).
 */
export function azRoleAssignments(rights: RightsModel): string[] {
  const lines = [
    '# Azure RBAC role assignments for the NimBus bus rights model (npm run provision -- --rights --format az).',
    '# Set SB_NAMESPACE_ID=$(az servicebus namespace show -g <group> -n <namespace> --query id -o tsv)',
    "# and each *_PRINCIPAL_ID to the identity's object id.",
  ];
  for (const identity of rights.identities) {
    const grants = identity.bus.filter((g) => !g.heldBy);
    lines.push('', `# ${identity.id}: ${identity.description}`);
    if (grants.length === 0) lines.push('# no role on Service Bus: it uses the console HTTP API only');
    for (const g of grants) {
      lines.push(
        `az role assignment create --assignee-object-id "$${principalVariable(identity.id)}" --assignee-principal-type ServicePrincipal ` +
          `--role "${AZURE_ROLE[g.right]}" --scope "${scopeOf(g.entity)}"`,
      );
    }
  }
  return lines;
}

/** A shared access policy that grants an identity its rights (SAS policies live on the namespace or on a topic). */
export interface SasPolicy {
  identity: string;
  /** Policy (key) name: the identity id with characters SAS names refuse replaced. */
  name: string;
  entity: { kind: 'namespace' } | { kind: 'topic'; topic: string };
  rights: BusRight[];
}

const RIGHT_ORDER: BusRight[] = ['Manage', 'Send', 'Listen'];

/**
 * The model as shared access policies. SAS cannot name a subscription, so Listen on a subscription becomes Listen on
 * its topic (which covers the topic's other subscriptions too: a known widening, see docs/deploy.md); Manage carries
 * Send and Listen, as Azure requires. Identities without bus rights (handoff agents) get no policy.
 */
export function sasPolicies(rights: RightsModel): SasPolicy[] {
  const policies: SasPolicy[] = [];
  for (const identity of rights.identities) {
    const byEntity = new Map<string, { entity: SasPolicy['entity']; rights: Set<BusRight> }>();
    for (const g of identity.bus.filter((x) => !x.heldBy)) {
      const entity: SasPolicy['entity'] = g.entity.kind === 'namespace' ? { kind: 'namespace' } : { kind: 'topic', topic: g.entity.topic };
      const key = entity.kind === 'namespace' ? '' : entity.topic;
      const slot = byEntity.get(key) ?? { entity, rights: new Set<BusRight>() };
      slot.rights.add(g.right);
      if (g.right === 'Manage') ['Send', 'Listen'].forEach((r) => slot.rights.add(r as BusRight));
      byEntity.set(key, slot);
    }
    for (const { entity, rights: set } of byEntity.values()) {
      policies.push({
        identity: identity.id,
        name: identity.id.replace(/[^A-Za-z0-9._-]+/g, '-'),
        entity,
        rights: RIGHT_ORDER.filter((r) => set.has(r)),
      });
    }
  }
  return policies;
}

/** `az servicebus … authorization-rule create` lines for the policies (`--format sas`). */
export function azSasPolicies(rights: RightsModel): string[] {
  const lines = [
    '# Shared access policies for the NimBus bus rights model (npm run provision -- --rights --format sas).',
    '# Set RG and NS to the resource group and namespace. Handoff agents get no policy.',
  ];
  for (const p of sasPolicies(rights)) {
    lines.push(
      p.entity.kind === 'namespace'
        ? `az servicebus namespace authorization-rule create -g "$RG" --namespace-name "$NS" --name ${p.name} --rights ${p.rights.join(' ')}`
        : `az servicebus topic authorization-rule create -g "$RG" --namespace-name "$NS" --topic-name ${p.entity.topic} --name ${p.name} --rights ${p.rights.join(' ')}`,
    );
  }
  return lines;
}
