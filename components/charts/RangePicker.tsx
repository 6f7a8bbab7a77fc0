'use client';
// Time range for the charts: 1 h / 24 h / 7 d / 30 d, or a custom range between two date-times on the wall clock
// the viewer chose (local time or UTC, the header's switch), as the Endpoint page's event filters are. What the
// boxes may become is decided in customRange.ts: only a range with both ends and from before to is ever passed on.
import { useState } from 'react';
import { useHydrated } from '../refreshing.ts';
import { useTimeZoneMode, type TimeZoneMode } from '../timeZone.tsx';
import { customButtonChoice, inputsInZone, inputsOfRange, readRangeInputs, type RangeInputs } from './customRange.ts';
import { RANGES, type TimeRange } from './metricsApi.ts';

export function RangePicker({ value, onChange }: { value: TimeRange; onChange: (r: TimeRange) => void }) {
  const zone = useTimeZoneMode();
  const [inputs, setInputs] = useState<RangeInputs>(() => {
    const now = Date.now();
    return inputsOfRange({ from: value.from ?? now - 3_600_000, to: value.to ?? now }, zone);
  });
  // Why Apply did nothing; cleared by the next edit or a range that applies.
  const [problem, setProblem] = useState<string | null>(null);
  // A custom range that changes from outside (Back, Forward, a link: the pages keep it in the URL) sets the boxes,
  // and so does the zone switch (the same instants on the other wall clock); adjusting state while rendering,
  // React's pattern for state derived from a changed prop.
  const [seen, setSeen] = useState<{ from?: number; to?: number; zone: TimeZoneMode }>({ from: value.from, to: value.to, zone });
  if (value.from !== seen.from || value.to !== seen.to || zone !== seen.zone) {
    setSeen({ from: value.from, to: value.to, zone });
    const moved = inputsInZone(inputs, seen.zone, zone);
    const outside = value.from !== seen.from || value.to !== seen.to;
    const shown = inputsOfRange({ from: value.from ?? 0, to: value.to ?? 0 }, zone);
    setInputs({
      from: outside && value.from !== undefined ? shown.from : moved.from,
      to: outside && value.to !== undefined ? shown.to : moved.to,
    });
    if (outside) setProblem(null);
  }
  const edit = (next: RangeInputs) => {
    setInputs(next);
    setProblem(null);
  };
  // The boxes show wall-clock times in the viewer's zone, which the server (UTC, its own clock) cannot render: a
  // custom range opened from a URL shows them once hydrated, so the server's HTML and the browser's first render agree.
  const hydrated = useHydrated();
  const btn = (active: boolean) => `rounded px-2 py-0.5 text-xs ${active ? 'bg-slate-800 text-white' : 'bg-slate-100 text-slate-700 hover:bg-slate-200'}`;
  return (
    <div className="flex flex-wrap items-center gap-1" role="group" aria-label="Time range" data-testid="range-picker">
      {RANGES.map(([k]) => (
        <button key={k} type="button" className={btn(value.key === k)} onClick={() => onChange({ key: k })} aria-pressed={value.key === k}>
          {k}
        </button>
      ))}
      <button
        type="button"
        className={btn(value.key === 'custom')}
        aria-pressed={value.key === 'custom'}
        onClick={() => {
          const choice = customButtonChoice(inputs, zone, Date.now());
          edit(choice.inputs);
          onChange(choice.range);
        }}
      >
        custom
      </button>
      {value.key === 'custom' && hydrated ? (
        <form
          className="flex flex-wrap items-center gap-1 text-xs"
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            const read = readRangeInputs(inputs, zone);
            if (!read.ok) return setProblem(read.problem);
            setProblem(null);
            onChange(read.range);
          }}
        >
          <input aria-label="From" type="datetime-local" value={inputs.from} onChange={(e) => edit({ ...inputs, from: e.target.value })} className="rounded border border-slate-300 px-1" />
          <span>–</span>
          <input aria-label="To" type="datetime-local" value={inputs.to} onChange={(e) => edit({ ...inputs, to: e.target.value })} className="rounded border border-slate-300 px-1" />
          <span className="text-slate-500" data-testid="range-zone">
            {zone === 'utc' ? 'UTC' : 'local time'}
          </span>
          <button type="submit" className="rounded bg-slate-200 px-2 py-0.5">
            Apply
          </button>
          {problem ? (
            <span role="alert" className="basis-full text-red-700">
              {problem}
            </span>
          ) : null}
        </form>
      ) : null}
    </div>
  );
}
