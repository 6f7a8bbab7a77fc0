'use client';
// A time-series chart on uPlot (canvas, about 50 kB, no dependencies, built for time series: a time x axis,
// thousands of points without lag, a cursor whose legend shows each series' value at the hovered time). Loaded in
// the browser only (it measures the page). Each series is drawn as given; `onPick` receives the time of the
// bucket under the cursor when the plot is clicked (the pages open the event list for it). The rendered point
// count is exposed as data-points for tests and for a "no data yet" message.
import 'uplot/dist/uPlot.min.css';
import { useEffect, useRef } from 'react';
import type uPlotT from 'uplot';
import { axisWidth } from './axisSize.ts';
import { DURATION_TICK_STEPS, formatMs, formatMsTicks } from './duration.ts';
import { useTimeZoneMode } from '../timeZone.tsx';

export interface ChartSeries {
  name: string;
  label: string;
  color: string;
  points: Array<[number, number | null]>;
  /** Drawn as bars instead of a line (counts per bucket). */
  bars?: boolean;
}

export interface TimeChartProps {
  series: ChartSeries[];
  height?: number;
  /** Unit shown on the y axis values in the legend ('/min'…). */
  unit?: string;
  /**
   * The values are durations in ms: the axis, legend and tooltip show them in ms, s, min or h by their size
   * (duration.ts), and the axis ticks at steps round in that unit. `unit` is then not used.
   */
  durationMs?: boolean;
  /** Hide the legend (small multiples); the cursor still shows values in the tooltip row. */
  compact?: boolean;
  onPick?: (t: number, values: Record<string, number | null>) => void;
  testId?: string;
  ariaLabel: string;
}

/** A palette colour read when uPlot draws, so axes and grid follow the theme (app/theme.css remaps the palette). */
const themeColor = (variable: string, fallback: string) => () =>
  getComputedStyle(document.documentElement).getPropertyValue(variable).trim() || fallback;
const AXIS = themeColor('--color-slate-600', '#475569');
const GRID = { stroke: themeColor('--color-slate-100', '#f1f5f9') };

function toData(series: ChartSeries[]): uPlotT.AlignedData {
  const xs = series[0]?.points.map(([t]) => t / 1000) ?? [];
  return [xs, ...series.map((s) => s.points.map(([, v]) => v))] as uPlotT.AlignedData;
}

export function TimeChart({ series, height = 180, unit = '', durationMs = false, compact = false, onPick, testId, ariaLabel }: TimeChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlotT | null>(null);
  const pick = useRef(onPick);
  pick.current = onPick;
  const shape = series.map((s) => `${s.name}:${s.color}:${s.bars ? 1 : 0}`).join('|');
  const latest = useRef(series);
  latest.current = series;
  // The time axis and the legend's time follow the header's local/UTC switch, as every other time does; a switch
  // builds the plot again.
  const zone = useTimeZoneMode();

  // Build the plot when the set of series changes; new points only call setData.
  useEffect(() => {
    let cancelled = false;
    let resize: ResizeObserver | undefined;
    void import('uplot').then(({ default: uPlot }) => {
      if (cancelled || !box.current) return;
      const el = box.current;
      const s = latest.current;
      const bars = uPlot.paths.bars?.({ size: [0.8, 40] });
      // The y axis fits its labels (axisSize.ts), measured in the axis' own font (uPlot keeps it as [font, px, css
      // px] once set up, scaled by the pixel ratio).
      const fitLabels =
        (min: number): uPlotT.Axis.Size =>
        (self, values, axisIdx) => {
          const axis = self.axes[axisIdx];
          const font = (axis?.font as unknown as [string] | undefined)?.[0];
          if (font) self.ctx.font = font;
          const tickSize = axis?.ticks?.show === false ? 0 : (axis?.ticks?.size ?? 10);
          return axisWidth((t) => self.ctx.measureText(t).width / uPlot.pxRatio, values, { tickSize, gap: axis?.gap ?? 5, min });
        };
      const tickLabels = (_u: uPlotT, vals: number[]) => (durationMs ? formatMsTicks(vals) : vals.map((v) => `${v}${unit}`));
      const ticksAt = durationMs ? { incrs: [...DURATION_TICK_STEPS] } : {};
      const opts: uPlotT.Options = {
        width: Math.max(120, el.clientWidth),
        height,
        legend: { show: !compact, live: true },
        cursor: { drag: { x: false, y: false }, points: { size: 6 } },
        scales: { x: { time: true } },
        ...(zone === 'utc' ? { tzDate: (ts: number) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC') } : {}),
        axes: compact
          ? [
              { show: false },
              { show: true, size: fitLabels(36), stroke: AXIS, ticks: { show: false }, grid: GRID, font: '10px sans-serif', ...(durationMs ? { values: tickLabels, ...ticksAt } : {}) },
            ]
          : [{ stroke: AXIS, grid: GRID }, { size: fitLabels(50), stroke: AXIS, grid: GRID, values: tickLabels, ...ticksAt }],
        series: [
          {},
          ...s.map((x) => ({
            label: x.label,
            stroke: x.color,
            fill: x.bars ? `${x.color}99` : undefined,
            width: 1.5,
            spanGaps: false,
            points: { show: false },
            ...(x.bars && bars ? { paths: bars } : {}),
            value: (_u: uPlotT, v: number | null) => (durationMs ? formatMs(v) : v == null ? '–' : `${Math.round(v * 100) / 100}${unit}`),
          })),
        ],
      };
      const u = new uPlot(opts, toData(s), el);
      plot.current = u;
      u.over.addEventListener('click', () => {
        const idx = u.cursor.idx;
        if (idx == null || !pick.current) return;
        const t = (u.data[0][idx] as number) * 1000;
        const values: Record<string, number | null> = {};
        latest.current.forEach((x, i) => (values[x.name] = (u.data[i + 1]?.[idx] as number | null | undefined) ?? null));
        pick.current(t, values);
      });
      if (pick.current) u.over.style.cursor = 'pointer';
      resize = new ResizeObserver(() => u.setSize({ width: Math.max(120, el.clientWidth), height }));
      resize.observe(el);
    });
    return () => {
      cancelled = true;
      resize?.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape, height, compact, unit, durationMs, zone]);

  useEffect(() => {
    plot.current?.setData(toData(series));
  }, [series]);

  const points = series.reduce((a, s) => a + s.points.filter(([, v]) => v !== null).length, 0);
  const nonZero = series.reduce((a, s) => a + s.points.filter(([, v]) => v !== null && v !== 0).length, 0);
  return <div ref={box} role="img" aria-label={ariaLabel} data-testid={testId} data-points={points} data-nonzero={nonZero} className="w-full" />;
}
