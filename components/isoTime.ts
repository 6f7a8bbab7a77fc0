// Times in filters and URLs: ISO-8601 with an offset, in the zone the viewer chose (components/timeZone.tsx: local
// time unless switched to UTC). `2026-12-03T11:26:00+01:00` in local mode, `2026-12-03T10:26:00Z` in UTC: the
// same instant either way, and a shared link says which wall clock it was written in.
import type { TimeZoneMode } from './timeZone.tsx';

const pad = (n: number, w = 2) => String(Math.trunc(n)).padStart(w, '0');

/** An instant as ISO-8601 with the offset of `mode` (seconds precision; `Z` for UTC). */
export function toIsoWithOffset(d: Date, mode: TimeZoneMode): string {
  if (mode === 'utc') return `${d.toISOString().slice(0, 19)}Z`;
  const offset = -d.getTimezoneOffset();
  const sign = offset >= 0 ? '+' : '-';
  const abs = Math.abs(offset);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${sign}${pad(abs / 60)}:${pad(abs % 60)}`;
}

/** An ISO instant as a `datetime-local` input's value (minutes) on the wall clock of `mode`. */
export function toInputValue(iso: string, mode: TimeZoneMode): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const shifted = mode === 'utc' ? d : new Date(d.getTime() - d.getTimezoneOffset() * 60_000);
  return shifted.toISOString().slice(0, 16);
}

/** A `datetime-local` input's value, read on the wall clock of `mode`, as ISO-8601 with that offset. */
export function fromInputValue(value: string, mode: TimeZoneMode): string {
  if (!value) return '';
  const d = new Date(mode === 'utc' ? `${value}Z` : value);
  return Number.isNaN(d.getTime()) ? '' : toIsoWithOffset(d, mode);
}
