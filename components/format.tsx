'use client';
// Small display helpers: relative times that tick, status badges with one colour per status.
import { useEffect, useState } from 'react';
import { formatLocal, formatUtc, useTimeZoneMode } from './timeZone.tsx';
import { useHydrated } from './refreshing.ts';

export function useNow(intervalMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(t);
  }, [intervalMs]);
  return now;
}

/**
 * A count with thousands separators (`12,345`), without Intl. The first Intl call in a browser tab (toLocaleString,
 * localeCompare, DateTimeFormat) loads ICU's locale data: a blocking 20-50 ms on a quiet machine and over 100 ms
 * on a busy one (bench/console.ts), spent during hydration when the count tables call it. A fixed format is also
 * the same on the server and in every browser, so hydration never meets a different text.
 */
export function formatCount(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const sign = n < 0 ? '-' : '';
  const [whole = '0', fraction] = String(Math.abs(n)).split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return sign + grouped + (fraction === undefined ? '' : `.${fraction}`);
}

/**
 * `1 failed event`, `2 failed events`: a count with its noun in the right number (formatCount's digits). `plural`
 * for the nouns that do not just take an s.
 */
export function countOf(n: number, singular: string, plural = `${singular}s`): string {
  return `${formatCount(n)} ${n === 1 ? singular : plural}`;
}

/** Orders strings by code unit, without Intl (see formatCount): ids and ISO-8601 times sort correctly this way. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function formatDuration(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

export function Ago({ at, now }: { at: string | null; now: number }) {
  // The hover text is the time itself, in the viewer's choice of zone (UTC in the server's render and while
  // hydrating, as the zone switch's own server value is).
  const mode = useTimeZoneMode();
  if (!at) return <span className="text-slate-500">—</span>;
  const t = Date.parse(at);
  return (
    // "ago" is relative to the clock of whoever rendered it (the server, for prefetched data): the browser's
    // differs by the time the page took to arrive, and its next tick replaces the text.
    <time dateTime={at} title={mode === 'utc' ? formatUtc(new Date(t)) : formatLocal(new Date(t))} className="whitespace-nowrap" suppressHydrationWarning>
      {formatDuration(now - t)} ago
    </time>
  );
}

/** A point in time under the viewer's rule (local with zone, or UTC); hovering shows the other one. */
export function Timestamp({ at }: { at: string | null }) {
  const mode = useTimeZoneMode();
  const hydrated = useHydrated();
  if (!at) return <span className="text-slate-500">—</span>;
  const t = new Date(at);
  if (Number.isNaN(t.getTime())) return <span className="font-mono text-xs">{at}</span>;
  const [shown, other] = mode === 'utc' ? [formatUtc(t), formatLocal(t)] : [formatLocal(t), formatUtc(t)];
  // The hover text waits for hydration: in UTC mode it is local time, which the server's render can only give in
  // the server's zone. React does not patch a mismatched attribute when it hydrates, and a viewer whose stored
  // choice is UTC renders nothing after hydration to replace it, so the title would keep the server's zone.
  return (
    <time dateTime={t.toISOString()} title={hydrated ? other : undefined} className="whitespace-nowrap font-mono text-xs">
      {shown}
    </time>
  );
}

const STATUS_STYLE: Record<string, string> = {
  Completed: 'bg-emerald-100 text-emerald-800 ring-emerald-200',
  Failed: 'bg-red-100 text-red-800 ring-red-200',
  DeadLettered: 'bg-rose-200 text-rose-900 ring-rose-300',
  Unsupported: 'bg-orange-100 text-orange-800 ring-orange-200',
  Deferred: 'bg-violet-100 text-violet-800 ring-violet-200',
  Pending: 'bg-sky-100 text-sky-800 ring-sky-200',
  Handoff: 'bg-amber-100 text-amber-900 ring-amber-200',
  Skipped: 'bg-slate-200 text-slate-700 ring-slate-300',
};

export function StatusBadge({ status, subStatus }: { status: string; subStatus?: string | null }) {
  const key = subStatus === 'Handoff' ? 'Handoff' : status;
  return (
    <span
      data-status={status}
      className={`inline-flex items-center rounded px-1.5 py-0.5 text-xs font-medium ring-1 ring-inset ${STATUS_STYLE[key] ?? 'bg-slate-100 text-slate-700 ring-slate-200'}`}
    >
      {status}
      {subStatus ? ` · ${subStatus}` : ''}
    </span>
  );
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div role="alert" className="rounded border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-800">
      {message}
    </div>
  );
}
