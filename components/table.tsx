// Table headers, one style for every table of the console: sentence case, small semibold slate text on a light band;
// numeric columns right-aligned with tabular figures (their cells use NUMERIC_CELL too, so digits line up); sortable
// columns are buttons inside the header cell, which carries aria-sort. The colours are the only place a dark theme
// needs to touch for table headers.
import type { ReactNode } from 'react';

/** The <thead> of every table. */
export const TABLE_HEAD = 'border-b border-slate-200 bg-slate-50 text-left text-xs font-semibold text-slate-600';
/** Body cells holding numbers: right-aligned, tabular figures. */
export const NUMERIC_CELL = 'text-right tabular-nums';

export type SortDirection = 'asc' | 'desc';
export interface SortState<K extends string> {
  key: K;
  dir: SortDirection;
}

/** Clicking the sorted column flips its direction; another column starts in its natural direction. */
export function nextSort<K extends string>(current: SortState<K>, key: K, naturalDir: SortDirection): SortState<K> {
  return current.key === key ? { key, dir: current.dir === 'asc' ? 'desc' : 'asc' } : { key, dir: naturalDir };
}

/**
 * A comparator for `sort`: `ascending[key]` orders ascending, descending reverses it; ties are broken by `tiebreak`
 * in its own order whatever the direction (rows with equal counts stay in name order).
 */
export function comparator<T, K extends string>(
  ascending: Record<K, (a: T, b: T) => number>,
  sort: SortState<K>,
  tiebreak: (a: T, b: T) => number = () => 0,
): (a: T, b: T) => number {
  const cmp = ascending[sort.key];
  return (a, b) => (sort.dir === 'asc' ? cmp(a, b) : cmp(b, a)) || tiebreak(a, b);
}

export function Th({ children, numeric = false, className = '' }: { children?: ReactNode; numeric?: boolean; className?: string }) {
  return (
    <th scope="col" className={`${numeric ? NUMERIC_CELL : 'text-left'} ${className}`}>
      {children}
    </th>
  );
}

/** A header cell whose column the table can be sorted by; `aria-sort` says how it is sorted now. */
export function SortableTh<K extends string>({
  label,
  sortKey,
  sort,
  onSort,
  numeric = false,
  className = '',
}: {
  label: string;
  sortKey: K;
  sort: SortState<K>;
  onSort: (key: K) => void;
  numeric?: boolean;
  className?: string;
}) {
  const active = sort.key === sortKey;
  const ariaSort = active ? (sort.dir === 'asc' ? 'ascending' : 'descending') : 'none';
  return (
    <th scope="col" aria-sort={ariaSort} className={`${numeric ? NUMERIC_CELL : 'text-left'} ${className}`}>
      <button
        type="button"
        onClick={() => onSort(sortKey)}
        className={`inline-flex items-center gap-1 rounded hover:text-slate-900 ${numeric ? 'flex-row-reverse' : ''} ${active ? 'text-slate-900' : ''}`}
      >
        <span>{label}</span>
        {/* The arrow is decoration: aria-sort on the cell tells assistive technology. */}
        <span aria-hidden="true" className={`w-3 ${active ? '' : 'text-slate-500'}`}>
          {active ? (sort.dir === 'asc' ? '▲' : '▼') : '↕'}
        </span>
      </button>
    </th>
  );
}
