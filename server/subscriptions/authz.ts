// Authorization of the operations pages' actions (replay, subscription pause/resume/purge/rule restore,
// reconcile, heartbeat): each has its own action in server/auth/roles.ts with the role it needs. A subscription
// action is scoped to the endpoint whose topic holds the subscription (topics are named after endpoints), so an
// endpoint's Operator may replay its dead letters; platform topics need the role site-wide.
import { authorize, type Authorized } from '../auth/authorize.ts';
import type { Action } from '../auth/roles.ts';
import { getContext } from '../context.ts';

export type { Authorized } from '../auth/authorize.ts';

/** The endpoint a subscription's topic belongs to, or undefined for a platform topic. */
export async function endpointOfTopic(topic: string): Promise<string | undefined> {
  const ctx = await getContext();
  return ctx.catalog.endpoints.find((e) => e.id.toLowerCase() === topic.toLowerCase())?.id;
}

export async function authorizeSubscription(
  request: Request,
  action: Extract<Action, 'replay' | `subscription.${string}`>,
  p: { topic: string; subscription: string },
): Promise<Authorized> {
  return authorize(request, action, await endpointOfTopic(p.topic), { target: `${p.topic}/${p.subscription}` });
}

/** Subscription actions by their body's `action`. */
export const SUBSCRIPTION_ACTIONS = {
  pause: 'subscription.pause',
  resume: 'subscription.resume',
  purge: 'subscription.purge',
  restoreRules: 'subscription.restoreRules',
} as const satisfies Record<string, Action>;
