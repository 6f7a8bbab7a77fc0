// The scale of a failure group's spark (FailuresView): the bars are drawn relative to the group's busiest bucket,
// so a bar's height means nothing without that number. This says it: the busiest bucket, the total, and how long
// a bucket and the window are (the server's spark window: 24 buckets, an hour each by default, longer or shorter
// when the page's "Updated in" choice moves the window's start). Pure, so the wording is tested directly.
import { countOf, formatCount } from '../format.tsx';

export interface SparkWindow {
  from: string;
  to: string;
  buckets: number;
}

/** A length of time as the spark's labels say it: "1 h", "7 h", "5 min", "2 d". */
function span(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.round(minutes / 60);
  // The server's window ends with the current hour, so "the last 7 days" is 169 hours: said as days when within an
  // hour of whole days.
  const days = Math.round(hours / 24);
  if (hours < 48 || Math.abs(hours - days * 24) > 1) return `${hours} h`;
  return `${days} d`;
}

export interface SparkScale {
  /** The busiest bucket's arrivals: the height of a full bar. */
  max: number;
  total: number;
  /** The visible top tick, e.g. "3/h" (per hour) or "3 per 7 h". */
  maxLabel: string;
  /** The visible caption, e.g. "5 in 24 h". */
  caption: string;
  /** The whole reading for screen readers. */
  label: string;
}

export function sparkScale(values: readonly number[], window: SparkWindow | undefined): SparkScale {
  const max = Math.max(0, ...values);
  const total = values.reduce((a, b) => a + b, 0);
  const whole = window ? Date.parse(window.to) - Date.parse(window.from) : NaN;
  const known = Number.isFinite(whole) && whole > 0 && window!.buckets > 0;
  const bucket = known ? span(whole / window!.buckets) : null;
  const perBucket = bucket === null ? '' : bucket === '1 h' ? '/h' : ` per ${bucket}`;
  const over = known ? ` in ${span(whole)}` : '';
  return {
    max,
    total,
    maxLabel: `${formatCount(max)}${perBucket}`,
    caption: `${formatCount(total)}${over}`,
    label: `Arrivals${bucket === null ? '' : ` per ${bucket === '1 h' ? 'hour' : bucket}`}${known ? ` over ${span(whole)}` : ''}: ${countOf(total, 'failed event')} in all, at most ${formatCount(max)} in one ${bucket === '1 h' ? 'hour' : 'bucket'}.`,
  };
}
