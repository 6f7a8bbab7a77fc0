// ISO 8601 durations as the ATOM API carries them ("PT1M", "P14D", "PT0.5S") and the "infinite" value
// .NET writes for TimeSpan.MaxValue. The broker works in milliseconds.

import { MAX_DURATION_MS } from '../broker/api.ts';

/** What Azure returns for an unbounded duration (TimeSpan.MaxValue). */
export const INFINITE_DURATION = 'P10675199DT2H48M5.4775807S';

const MS = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

const NUMBER = '(\\d+(?:\\.\\d+)?)';
const DURATION = new RegExp(
  `^P(?:${NUMBER}Y)?(?:${NUMBER}M)?(?:${NUMBER}W)?(?:${NUMBER}D)?(?:T(?:${NUMBER}H)?(?:${NUMBER}M)?(?:${NUMBER}S)?)?$`,
);

export class DurationFormatError extends Error {
  constructor(value: string) {
    super(`'${value.slice(0, 64)}' is not an ISO 8601 duration (for example PT1M, P14D, PT30S)`);
    this.name = 'DurationFormatError';
  }
}

/**
 * Milliseconds of an ISO 8601 duration. Years and months have no fixed length; they count as 365 and 30 days,
 * which is what a broker needs for TTLs. Anything at or beyond TimeSpan.MaxValue becomes MAX_DURATION_MS.
 */
export function parseDuration(value: string): number {
  const text = value.trim();
  const m = DURATION.exec(text);
  // "P" alone and "PT" with no component match the pattern but are not durations.
  if (!m || text === 'P' || text.endsWith('T')) throw new DurationFormatError(value);
  const n = (i: number): number => (m[i] === undefined ? 0 : Number(m[i]));
  const ms =
    n(1) * 365 * MS.day +
    n(2) * 30 * MS.day +
    n(3) * 7 * MS.day +
    n(4) * MS.day +
    n(5) * MS.hour +
    n(6) * MS.minute +
    n(7) * MS.second;
  if (!Number.isFinite(ms)) throw new DurationFormatError(value);
  return Math.min(Math.floor(ms), MAX_DURATION_MS);
}

/** The shortest ISO 8601 form of a millisecond count, the way Azure writes it ("PT1M", "P14D", "PT0S"). */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms >= MAX_DURATION_MS) return INFINITE_DURATION;
  let rest = Math.max(0, Math.floor(ms));
  const days = Math.floor(rest / MS.day);
  rest -= days * MS.day;
  const hours = Math.floor(rest / MS.hour);
  rest -= hours * MS.hour;
  const minutes = Math.floor(rest / MS.minute);
  rest -= minutes * MS.minute;
  const secondsWhole = Math.floor(rest / MS.second);
  const millis = rest - secondsWhole * MS.second;
  const seconds =
    millis === 0
      ? `${secondsWhole}`
      : `${secondsWhole}.${String(millis).padStart(3, '0').replace(/0+$/, '')}`;

  let time = '';
  if (hours > 0) time += `${hours}H`;
  if (minutes > 0) time += `${minutes}M`;
  if (secondsWhole > 0 || millis > 0) time += `${seconds}S`;
  if (days === 0 && time === '') return 'PT0S';
  return `P${days > 0 ? `${days}D` : ''}${time === '' ? '' : `T${time}`}`;
}
