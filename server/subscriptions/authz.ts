// Authorization of the operations pages' actions (replay, subscription pause/resume/purge/rule restore,
// reconcile, heartbeat): each has its own action in server/auth/roles.ts with the role it needs. A subscription
// action is scoped to the endpoint whose topic holds the subscription (topics are named after endpoints), so an
// endpoint's Operator may replay its dead letters; platform topics need the role site-wide.
import { authorize, refuseAuthorized, type Authorized } from '../auth/authorize.ts';
import { effectiveRole, type Action } from '../auth/roles.ts';
import { getContext } from '../context.ts';

/** The endpoint a subscription's topic belongs to, or undefined for a platform topic. */
async function endpointOfTopic(topic: string): Promise<string | undefined> {
  const ctx = await getContext();
  return ctx.catalog.endpoints.find((e) => e.id.toLowerCase() === topic.toLowerCase())?.id;
}

export async function authorizeSubscription(
  request: Request,
  action: Extract<Action, 'replay' | `subscription.${string}`>,
  p: { topic: string; subscription: string },
): Promise<Authorized> {
  const endpointId = await endpointOfTopic(p.topic);
  // A platform topic's dead letters (Resolver, Manager) are every endpoint's: replaying them is an Owner's act.
  const checked: Action = action === 'replay' && endpointId === undefined ? 'replay.platform' : action;
  return authorize(request, checked, endpointId, { target: `${p.topic}/${p.subscription}` });
}

/**
 * Reading a subscription's dead letters (the list and the replay preview) shows message bodies and application
 * properties, so it is scoped like the event details: `read` on the endpoint whose topic holds the subscription.
 * A platform topic (Resolver, Manager, ...) dead-letters messages of every endpoint, so it needs a role held
 * site-wide. `decide` lets any role anywhere `read` without an endpoint (the overviews an endpoint's Operator needs
 * to find it); that shortcut must not reach these bodies, hence the site-wide check here, refused and audited as
 * `authorize` refuses (refuseAuthorized: the same refusal budget).
 */
export async function authorizeDeadLetterRead(request: Request, p: { topic: string; subscription: string }): Promise<Authorized> {
  const endpointId = await endpointOfTopic(p.topic);
  const subject = { target: `${p.topic}/${p.subscription}` };
  const who = await authorize(request, 'read', endpointId, subject);
  if (endpointId !== undefined || effectiveRole(who.assignments, undefined) !== null) return who;
  const detail = `reading the dead letters of platform topic ${p.topic} needs a role held site-wide (they hold every endpoint's messages); ${who.user} has roles only on single endpoints`;
  return refuseAuthorized(who, detail);
}

/** Subscription actions by their body's `action`. */
export const SUBSCRIPTION_ACTIONS = {
  pause: 'subscription.pause',
  resume: 'subscription.resume',
  purge: 'subscription.purge',
  restoreRules: 'subscription.restoreRules',
} as const satisfies Record<string, Action>;
