'use client';
// Operations → Reconcile: the "Event" cell its tables share - the event's id linking to its page, then where the
// row lives (endpoint · session) and what kind of finding it is. One component, so the stale and the stuck tables
// name a row the same way; a table adds its own lines below (`children`).
import type { ReactNode } from 'react';
import Link from '../Link.tsx';
import { eventHref } from '../api.ts';

export function EventCell(props: {
  endpointId: string;
  eventId: string;
  sessionId: string;
  /** What the row is, after endpoint and session (its event type, or why it is stuck). */
  detail: string;
  children?: ReactNode;
}) {
  const { endpointId, eventId, sessionId, detail, children } = props;
  return (
    <td className="px-3 py-2">
      <Link href={eventHref(endpointId, eventId)} className="font-mono text-xs text-sky-700 hover:underline">
        {eventId}
      </Link>
      <div className="text-xs text-slate-500">
        {endpointId} · session {sessionId || '—'} · {detail}
      </div>
      {children}
    </td>
  );
}
