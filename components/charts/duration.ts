// Durations in milliseconds (latency percentiles, round trips) in the unit their size calls for: ms, s, min or h.
// Drawn always in ms, a p99 of half an hour after a restart read "2000000 ms" and pushed the axis' labels wide.
// No Intl (format.tsx explains why): a value keeps at most two decimals, trailing zeros dropped.

export type DurationUnit = 'ms' | 's' | 'min' | 'h';

const UNITS: ReadonlyArray<readonly [DurationUnit, number]> = [
  ['h', 3_600_000],
  ['min', 60_000],
  ['s', 1_000],
  ['ms', 1],
];

/** The largest unit of which `ms` is at least one (ms below a second, and for 0 or a value that is not finite). */
export function durationUnit(ms: number): readonly [DurationUnit, number] {
  const size = Math.abs(ms);
  if (!Number.isFinite(size)) return ['ms', 1];
  return UNITS.find(([, factor]) => size >= factor) ?? ['ms', 1];
}

function inUnit(ms: number, factor: number): string {
  const n = Math.round((ms / factor) * 100) / 100;
  return String(Object.is(n, -0) ? 0 : n);
}

/** One duration in its own unit: 950 → "950 ms", 1234 → "1.23 s", 2000000 → "33.33 min"; null → "–". */
export function formatMs(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms)) return '–';
  const [unit, factor] = durationUnit(ms);
  return `${inUnit(ms, factor)} ${unit}`;
}

/**
 * Labels of an axis' ticks, all in one unit (the largest tick's), so that they read as one scale: [0, 20000,
 * 40000] → "0 s", "20 s", "40 s"; [0, 1200000, 2400000] → "0 min", "20 min", "40 min".
 */
export function formatMsTicks(ticks: readonly number[]): string[] {
  const largest = ticks.reduce((m, v) => (Number.isFinite(v) ? Math.max(m, Math.abs(v)) : m), 0);
  const [unit, factor] = durationUnit(largest);
  return ticks.map((v) => `${inUnit(v, factor)} ${unit}`);
}

/**
 * Tick steps for a duration axis, in ms, that are round numbers in their unit (0.1, 0.2, 0.5, 1, 2, 5 … ms; 1, 2, 5, 10, 15, 30 s
 * and min; 1, 2, 3, 6, 12, 24 … h), so a half-hour axis reads "10 min", "20 min" rather than "8.33 min".
 */
export const DURATION_TICK_STEPS: readonly number[] = [
  ...[0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500],
  ...[1, 2, 5, 10, 15, 30].map((s) => s * 1_000),
  ...[1, 2, 5, 10, 15, 30].map((m) => m * 60_000),
  ...[1, 2, 3, 6, 12, 24, 48, 96, 168, 336, 720].map((h) => h * 3_600_000),
];
