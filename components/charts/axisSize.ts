// The width of a chart's y axis, from its labels: uPlot's axes have a fixed size unless told otherwise (50 px), and a
// label wider than that was cut at the left edge ("1000 ms" showed as "00 ms" on the Endpoint page's latency chart,
// which reads as no latency at all).

export interface AxisSpacing {
  /** Tick length (0 when ticks are hidden). */
  tickSize: number;
  /** Space between the ticks and the labels. */
  gap: number;
  /** Never narrower than this: short labels keep the axis as it was. */
  min: number;
}

/** CSS pixels the axis needs so that its widest label fits, given how wide a text is drawn (`measure`). */
export function axisWidth(measure: (text: string) => number, labels: readonly string[] | null, spacing: AxisSpacing): number {
  const widest = (labels ?? []).reduce((w, label) => Math.max(w, measure(label)), 0);
  // 2 px to spare: a label is drawn at a rounded position.
  return Math.max(spacing.min, Math.ceil(widest + spacing.tickSize + spacing.gap + 2));
}
