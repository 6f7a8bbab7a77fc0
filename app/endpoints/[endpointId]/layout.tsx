import type { ReactNode } from 'react';
import { notFound } from 'next/navigation';
import { currentViewer } from '../../../components/auth/viewer.ts';
import { callerRequest } from '../../../components/prefetch.tsx';
import { authorize } from '../../../server/auth/authorize.ts';
import { getContext } from '../../../server/context.ts';

/**
 * An endpoint the catalog does not know is a missing page (404), not an empty list - for the endpoint and its
 * events alike. Decided here, before any of the page is sent, so the answer's status can still be 404 (the section
 * has no loading boundary: docs/console.md says why).
 * (When the console cannot open its connections the pages say so themselves.)
 *
 * Only for a caller who may read the endpoints (as GET /api/endpoints/{E}: authorized first, then 404): nobody
 * signed in, or signed in without a role, gets the page as for a known endpoint (the sign-in hop, or the page's own
 * refusal). Before, the 404 came first, so anyone could tell which endpoint names exist.
 */
export default async function EndpointLayout({ children, params }: { children: ReactNode; params: Promise<{ endpointId: string }> }) {
  const { endpointId } = await params;
  if ((await currentViewer()).principal === null) return children;
  const mayRead = await callerRequest().then((request) => authorize(request, 'read')).then(
    () => true,
    () => false,
  );
  if (!mayRead) return children;
  const catalog = await getContext().then(
    (ctx) => ctx.catalog,
    () => null,
  );
  if (catalog !== null && !catalog.endpoints.some((e) => e.id === endpointId)) notFound();
  return children;
}
