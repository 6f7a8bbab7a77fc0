import type { ReactNode } from 'react';
import { notFound } from 'next/navigation';
import { getContext } from '../../../server/context.ts';

/**
 * An endpoint the catalog does not know is a missing page (404), not an empty list - for the endpoint and its
 * events alike. Decided here, before any of the page is sent, so the answer's status can still be 404 (the section
 * has no loading boundary: docs/console.md says why).
 * (When the console cannot open its connections the pages say so themselves.)
 */
export default async function EndpointLayout({ children, params }: { children: ReactNode; params: Promise<{ endpointId: string }> }) {
  const { endpointId } = await params;
  const catalog = await getContext().then(
    (ctx) => ctx.catalog,
    () => null,
  );
  if (catalog !== null && !catalog.endpoints.some((e) => e.id === endpointId)) notFound();
  return children;
}
