// Shared shapes and formatting for benchmarks: every benchmark reports rows with a value, the baseline it is
// compared with (measured in the same run) and the ratio, printed as one markdown table.

export interface BenchRow {
  figure: string;
  value: number;
  unit: string;
  /** The baseline figure measured in the same run, and its unit. */
  baseline?: number;
  /** Higher is better (throughput) or lower is better (latency): decides how the ratio reads. */
  better: 'higher' | 'lower';
  /** A target to meet, if the specification gives one. */
  target?: number;
  note?: string;
}

export interface BenchResult {
  title: string;
  rows: BenchRow[];
  /** Sizes and settings used, printed under the table. */
  settings: Record<string, string | number>;
}

export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number.parseInt(raw, 10);
  if (!Number.isFinite(n) || n <= 0)
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

export function percentile(sortedAscending: number[], p: number): number {
  if (sortedAscending.length === 0) return Number.NaN;
  const idx = Math.min(
    sortedAscending.length - 1,
    Math.max(0, Math.ceil((p / 100) * sortedAscending.length) - 1),
  );
  return sortedAscending[idx]!;
}

/** The median and 95th percentile of latency samples (ms), given in any order. */
export interface Percentiles {
  p50: number;
  p95: number;
}

export function percentiles(samples: number[]): Percentiles {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95) };
}

/**
 * The p50 and p95 rows of one latency figure (`<figure>, p50` / `<figure>, p95`), each against the same percentile
 * of the baseline measured in the same run; `p95Target` is the specification's bound on the p95, if it has one.
 */
export function latencyRows(figure: string, measured: Percentiles, baseline: Percentiles, p95Target?: number): BenchRow[] {
  return [
    { figure: `${figure}, p50`, value: measured.p50, unit: 'ms', baseline: baseline.p50, better: 'lower' },
    { figure: `${figure}, p95`, value: measured.p95, unit: 'ms', baseline: baseline.p95, better: 'lower', ...(p95Target === undefined ? {} : { target: p95Target }) },
  ];
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return 'n/a';
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  return n.toFixed(2);
}

export function toMarkdown(result: BenchResult): string {
  const lines = [
    `### ${result.title}`,
    '',
    '| figure | value | baseline | ratio to baseline | target |',
    '|---|---:|---:|---:|---|',
  ];
  for (const r of result.rows) {
    const ratio = r.baseline !== undefined && r.baseline > 0 ? r.value / r.baseline : Number.NaN;
    const target =
      r.target === undefined
        ? ''
        : `${r.better === 'higher' ? '>=' : '<='} ${fmt(r.target)} ${r.unit}: ${
            (r.better === 'higher' ? r.value >= r.target : r.value <= r.target) ? 'met' : '**missed**'
          }`;
    lines.push(
      `| ${r.figure} | ${fmt(r.value)} ${r.unit} | ${r.baseline === undefined ? '' : `${fmt(r.baseline)} ${r.unit}`} | ${
        Number.isNaN(ratio) ? '' : `${ratio.toFixed(3)}x`
      } | ${target} |`,
    );
  }
  lines.push('');
  lines.push(
    `Settings: ${Object.entries(result.settings)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}`,
  );
  const notes = result.rows.filter((r) => r.note).map((r) => `- ${r.figure}: ${r.note}`);
  if (notes.length) lines.push('', ...notes);
  return lines.join('\n');
}
