// Turns a LIKE pattern into a string matcher. Common shapes ('abc', 'abc%', '%abc', '%abc%') avoid regular
// expressions because filters run on every message sent to a topic.

import { SqlError } from './api.ts';

export type StringMatcher = (text: string) => boolean;

/**
 * @param escape a single character, or undefined for none
 * @throws SqlError when the pattern ends with the escape character (nothing left to escape)
 */
export function compileLikePattern(pattern: string, escape: string | undefined): StringMatcher {
  // Split into literal runs and wildcards.
  const parts: Array<{ literal: string } | { wildcard: '%' | '_' }> = [];
  let literal = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (escape !== undefined && c === escape) {
      if (i + 1 >= pattern.length) {
        throw new SqlError(`LIKE pattern '${pattern}' ends with its escape character '${escape}'`);
      }
      literal += pattern[++i];
    } else if (c === '%' || c === '_') {
      if (literal) parts.push({ literal });
      literal = '';
      parts.push({ wildcard: c });
    } else {
      literal += c;
    }
  }
  if (literal) parts.push({ literal });

  const only = (i: number): string | undefined => {
    const part = parts[i];
    return part && 'literal' in part ? part.literal : undefined;
  };
  const isPercent = (i: number): boolean => {
    const part = parts[i];
    return part !== undefined && 'wildcard' in part && part.wildcard === '%';
  };

  if (parts.length === 0) return (text) => text.length === 0;
  if (parts.length === 1) {
    const lit = only(0);
    if (lit !== undefined) return (text) => text === lit;
    if (isPercent(0)) return () => true;
  }
  if (parts.length === 2) {
    const first = only(0);
    const second = only(1);
    if (first !== undefined && isPercent(1)) return (text) => text.startsWith(first);
    if (second !== undefined && isPercent(0)) return (text) => text.endsWith(second);
  }
  if (parts.length === 3 && isPercent(0) && isPercent(2)) {
    const middle = only(1);
    if (middle !== undefined) return (text) => text.includes(middle);
  }

  let source = '^';
  for (const part of parts) {
    if ('literal' in part) source += part.literal.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
    else source += part.wildcard === '%' ? '[\\s\\S]*' : '[\\s\\S]';
  }
  source += '$';
  const regex = new RegExp(source);
  return (text) => regex.test(text);
}
