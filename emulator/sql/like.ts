// Turns a LIKE pattern into a string matcher, in time linear in the text for a given pattern. A regular
// expression would be shorter, but '%_%_%_…x' made V8's backtracking engine try every way of placing the
// wildcards: forty characters of pattern stalled the whole emulator (AMQP and HTTP) for seconds on every
// message, and a pattern can come from a message property. Filters run on every message sent to a topic.
//
// How: '%' splits the pattern into segments of literal characters and '_' (any one character). The first
// segment must match at the start, the last at the end, and the ones between anywhere in order; taking the
// leftmost place for each middle segment is never worse than a later one (it leaves more text for the rest),
// so no choice is ever revisited. Each segment is matched by direct comparison at each start position:
// O(text × pattern) at worst, no backtracking across segments.

import { SqlError } from './api.ts';

export type StringMatcher = (text: string) => boolean;

/** A run between '%' wildcards: characters, with null standing for '_' (any one UTF-16 code unit). */
type Segment = Array<string | null>;

/** Counts character comparisons when given; tests use it to show the work grows linearly. */
export interface LikeStats {
  steps: number;
}

/**
 * @param escape a single character, or undefined for none
 * @throws SqlError when the pattern ends with the escape character (nothing left to escape)
 */
export function compileLikePattern(
  pattern: string,
  escape: string | undefined,
  stats?: LikeStats,
): StringMatcher {
  const segments: Segment[] = [[]];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    const current = segments[segments.length - 1]!;
    if (escape !== undefined && c === escape) {
      if (i + 1 >= pattern.length) {
        throw new SqlError(`LIKE pattern '${pattern}' ends with its escape character '${escape}'`);
      }
      current.push(pattern[++i] as string);
    } else if (c === '%') {
      segments.push([]);
    } else if (c === '_') {
      current.push(null);
    } else {
      current.push(c);
    }
  }
  // Consecutive '%' leave empty middle segments, which match anywhere: drop them (keep first and last).
  const first = segments[0]!;
  const last = segments.length > 1 ? segments[segments.length - 1]! : undefined;
  const middle = segments.slice(1, -1).filter((s) => s.length > 0);

  // Fast paths for the common shapes ('abc', 'abc%', '%abc', '%abc%'): plain string operations.
  const literal = (s: Segment): string | undefined =>
    s.every((c) => c !== null) ? (s as string[]).join('') : undefined;
  if (!stats) {
    const f = literal(first);
    if (last === undefined && f !== undefined) return (text) => text === f;
    if (last !== undefined && middle.length === 0) {
      const l = literal(last);
      if (f !== undefined && l !== undefined) {
        return (text) => text.length >= f.length + l.length && text.startsWith(f) && text.endsWith(l);
      }
    }
    if (first.length === 0 && last?.length === 0 && middle.length === 1) {
      const m = literal(middle[0]!);
      if (m !== undefined) return (text) => text.includes(m);
    }
  }

  const counter = stats ?? { steps: 0 };
  /** Whether `seg` matches text at `at` (the caller has checked that it fits). */
  const matchesAt = (text: string, seg: Segment, at: number): boolean => {
    for (let j = 0; j < seg.length; j++) {
      counter.steps++;
      const c = seg[j];
      if (c !== null && text[at + j] !== c) return false;
    }
    return true;
  };

  if (last === undefined) {
    return (text) => text.length === first.length && matchesAt(text, first, 0);
  }
  return (text) => {
    // The first segment at the start, the last at the end, without overlapping each other.
    if (text.length < first.length + last.length) return false;
    if (!matchesAt(text, first, 0)) return false;
    const end = text.length - last.length;
    if (!matchesAt(text, last, end)) return false;
    let pos = first.length;
    for (const seg of middle) {
      let found = -1;
      for (let at = pos; at + seg.length <= end; at++) {
        counter.steps++;
        if (matchesAt(text, seg, at)) {
          found = at;
          break;
        }
      }
      if (found < 0) return false;
      pos = found + seg.length;
    }
    return true;
  };
}
