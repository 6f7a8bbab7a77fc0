// The custom range's two boxes (RangePicker) and what they may become: the one place that decides whether the boxes
// hold a range, kept apart from React so every case is a unit test. The boxes are `datetime-local` values on the
// wall clock the viewer chose (components/timeZone.tsx), read and written with components/isoTime.ts as the
// Endpoint page's event filters are; a range is only ever pushed with both ends real instants and from before to,
// since an invalid one either breaks the URL writer (UTC) or is silently dropped by the URL parser (rangeUrl.ts).
import { fromInputValue, toInputValue } from '../isoTime.ts';
import type { TimeZoneMode } from '../timeZone.tsx';

/** What the From and To boxes hold: `datetime-local` values (`2026-12-03T10:00`), or '' when cleared. */
export interface RangeInputs {
  from: string;
  to: string;
}

/** A custom range both of whose ends are instants (epoch ms), from before to. */
export interface CustomRange {
  key: 'custom';
  from: number;
  to: number;
}

export type RangeInputsReading = { ok: true; range: CustomRange } | { ok: false; problem: string };

/** The span the custom button opens when the boxes hold no range: the last hour, as the default preset. */
export const FALLBACK_SPAN_MS = 3_600_000;

const instantOf = (value: string, zone: TimeZoneMode): number => {
  const iso = fromInputValue(value, zone);
  return iso ? Date.parse(iso) : Number.NaN;
};

/** The boxes read on the wall clock of `zone`: a range, or what is wrong with them in words for the viewer. */
export function readRangeInputs(inputs: RangeInputs, zone: TimeZoneMode): RangeInputsReading {
  const from = instantOf(inputs.from, zone);
  const to = instantOf(inputs.to, zone);
  if (Number.isNaN(from) && Number.isNaN(to)) return { ok: false, problem: 'Enter a date and time in both From and To.' };
  if (Number.isNaN(from)) return { ok: false, problem: 'Enter a date and time in From.' };
  if (Number.isNaN(to)) return { ok: false, problem: 'Enter a date and time in To.' };
  if (from >= to) return { ok: false, problem: 'From must be before To.' };
  return { ok: true, range: { key: 'custom', from, to } };
}

/** The boxes showing `range` on the wall clock of `zone` (minutes: what a `datetime-local` box shows). */
export function inputsOfRange(range: { from: number; to: number }, zone: TimeZoneMode): RangeInputs {
  const box = (ms: number) => toInputValue(new Date(ms).toISOString(), zone);
  return { from: box(range.from), to: box(range.to) };
}

/**
 * What the custom button switches to: the boxes' range when they hold one; otherwise (a box cleared, the ends
 * reversed) the last hour ending `now`, with the boxes reset to show it. Never an invalid range: the button has no
 * room for a message, and the operator asked for a custom range, not an error.
 */
export function customButtonChoice(inputs: RangeInputs, zone: TimeZoneMode, now: number): { range: CustomRange; inputs: RangeInputs } {
  const read = readRangeInputs(inputs, zone);
  if (read.ok) return { range: read.range, inputs };
  const range: CustomRange = { key: 'custom', from: now - FALLBACK_SPAN_MS, to: now };
  return { range, inputs: inputsOfRange(range, zone) };
}

/**
 * The boxes after the viewer switches between local time and UTC: the same instants on the new wall clock. A box
 * that holds no time (cleared) stays as it is.
 */
export function inputsInZone(inputs: RangeInputs, from: TimeZoneMode, to: TimeZoneMode): RangeInputs {
  if (from === to) return inputs;
  const move = (value: string) => {
    const iso = fromInputValue(value, from);
    return iso ? toInputValue(iso, to) : value;
  };
  return { from: move(inputs.from), to: move(inputs.to) };
}
