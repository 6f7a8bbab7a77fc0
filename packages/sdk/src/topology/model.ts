// The topology model: the topics, subscriptions and rules the platform needs, as plain data. Derived from the
// catalog by a pure function (derive.ts) and applied by the provisioner (provision.ts).

export interface RuleModel {
  name: string;
  /** SQL filter expression over `user.<Property>`. */
  filter: string;
  /** SQL action (`SET ...`), when the rule rewrites properties of the messages it matches. */
  action?: string;
}

export interface SubscriptionModel {
  topic: string;
  name: string;
  requiresSession: boolean;
  /** Topic the broker auto-forwards matched messages to. */
  forwardTo?: string;
  rules: RuleModel[];
  /** What the subscription is for; shown by the provisioner and the console's Topology pages. */
  purpose: string;
}

export interface TopicModel {
  name: string;
  /** 'endpoint' topics carry one endpoint's traffic; 'platform' topics are Resolver and Manager. */
  kind: 'endpoint' | 'platform';
  subscriptions: SubscriptionModel[];
}

export interface TopologyModel {
  topics: TopicModel[];
}

/** The rule name the broker gives the catch-all rule of a new subscription. */
export const DEFAULT_RULE_NAME = '$Default';
/** The catch-all filter, as the broker reports a TrueFilter. */
export const TRUE_FILTER = '1=1';
