import type { ReactNode } from 'react';
import { notFound } from 'next/navigation';
import { currentViewer } from '../../../../../components/auth/viewer.ts';
import { callerRequest } from '../../../../../components/prefetch.tsx';
import { getContext } from '../../../../../server/context.ts';
import { authorizeDeadLetterRead } from '../../../../../server/subscriptions/authz.ts';
import { subscriptionParams } from '../../../../../server/subscriptions/routes.ts';
import { subscriptionExists } from '../../../../../server/subscriptions/manage.ts';

/** A path segment as the page reads it; one that does not decode cannot name an entity. */
function decoded(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/**
 * A subscription the broker does not have (an unknown topic or subscription, a name no entity can have) is a
 * missing page (404), not a dead-letter list with an error inside - decided here, before any of the page is sent,
 * as app/endpoints/[endpointId]/layout.tsx does for endpoints. When the broker cannot be asked, the page says so
 * itself. Nobody signed in: nothing is looked up (the root layout sends the browser to sign-in).
 *
 * Only for a caller who may read this subscription's dead letters (as GET …/{topic}/{subscription}/deadletters:
 * authorized first, then 404): anyone else - no role, an Agent, a Reader of another endpoint - gets the page as for
 * a subscription that exists, and the page's own read shows the refusal. Before, the broker was asked for any
 * signed-in caller, so a roleless account could tell which topics (endpoint names) and subscriptions (who consumes
 * whom) exist from 404 against 200. A name that no entity can have is 404 for everyone: that says nothing about
 * what exists.
 */
export default async function SubscriptionLayout({ children, params }: { children: ReactNode; params: Promise<{ topic: string; subscription: string }> }) {
  const p = await params;
  const ref = subscriptionParams.safeParse({ topic: decoded(p.topic), subscription: decoded(p.subscription) });
  if (!ref.success) notFound();
  if ((await currentViewer()).principal === null) return children;
  const mayRead = await callerRequest().then((request) => authorizeDeadLetterRead(request, ref.data)).then(
    () => true,
    () => false,
  );
  if (!mayRead) return children;
  const exists = await getContext().then(
    (ctx) => subscriptionExists(ctx.serviceBus.admin, ref.data),
    () => true,
  ).catch(() => true);
  if (!exists) notFound();
  return children;
}
