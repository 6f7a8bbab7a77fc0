// Splits Service Bus SQL (filter or action text) into tokens.
// Positions are 1-based character columns so error messages match what an operator counts in the rule text.

import { SqlError } from './api.ts';

export type TokenType =
  | 'identifier' // regular identifier or keyword (keywords are recognised by the parser, case-insensitively)
  | 'quotedIdentifier' // "name" - never a keyword
  | 'delimitedIdentifier' // [name] - never a keyword
  | 'string'
  | 'integer'
  | 'decimal' // has a decimal point or an exponent: a double on Azure
  | 'parameter' // @name
  | 'operator'
  | 'end';

export interface Token {
  type: TokenType;
  /** Identifier name, string contents, parameter name (with '@'), operator symbol or number text. */
  text: string;
  /** 1-based position of the token's first character. */
  position: number;
}

/** Words that cannot be used as regular identifiers without a scope prefix or brackets. */
export const KEYWORDS = new Set([
  'AND',
  'OR',
  'NOT',
  'IS',
  'NULL',
  'IN',
  'LIKE',
  'ESCAPE',
  'EXISTS',
  'TRUE',
  'FALSE',
  'SET',
  'REMOVE',
]);

const TWO_CHAR_OPERATORS = new Set(['<>', '!=', '>=', '<=']);
const ONE_CHAR_OPERATORS = new Set(['=', '<', '>', '+', '-', '*', '/', '%', '(', ')', ',', ';', '.']);

// Identifiers follow the documented [[:IsLetter:]][_[:IsLetter:][:IsDigit:]]* shape, over Unicode.
const IDENT_START = /\p{L}/u;
const IDENT_PART = /[\p{L}\p{Nd}_]/u;
const DIGIT = /[0-9]/;

export function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  const n = sql.length;
  let i = 0;
  while (i < n) {
    const c = sql[i] as string;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v') {
      i++;
      continue;
    }
    const start = i;
    const position = i + 1;

    if (c === "'") {
      const { text, next } = readQuoted(sql, i, "'", 'string literal');
      tokens.push({ type: 'string', text, position });
      i = next;
      continue;
    }
    if (c === '"') {
      const { text, next } = readQuoted(sql, i, '"', 'quoted identifier');
      if (text.length === 0) throw new SqlError(`Empty quoted identifier at position ${position}`, position);
      tokens.push({ type: 'quotedIdentifier', text, position });
      i = next;
      continue;
    }
    if (c === '[') {
      const { text, next } = readQuoted(sql, i, ']', 'bracketed name');
      if (text.length === 0) throw new SqlError(`Empty bracketed name at position ${position}`, position);
      tokens.push({ type: 'delimitedIdentifier', text, position });
      i = next;
      continue;
    }
    if (DIGIT.test(c) || (c === '.' && DIGIT.test(sql[i + 1] ?? ''))) {
      i = readNumber(sql, i, tokens);
      continue;
    }
    if (c === '@') {
      i++;
      while (i < n && IDENT_PART.test(sql[i] as string)) i++;
      if (i === start + 1) {
        throw new SqlError(`Parameter name expected after '@' at position ${position}`, position);
      }
      tokens.push({ type: 'parameter', text: sql.slice(start, i), position });
      continue;
    }
    if (IDENT_START.test(c)) {
      i++;
      while (i < n && IDENT_PART.test(sql[i] as string)) i++;
      tokens.push({ type: 'identifier', text: sql.slice(start, i), position });
      continue;
    }
    const two = sql.slice(i, i + 2);
    if (TWO_CHAR_OPERATORS.has(two)) {
      tokens.push({ type: 'operator', text: two, position });
      i += 2;
      continue;
    }
    if (ONE_CHAR_OPERATORS.has(c)) {
      tokens.push({ type: 'operator', text: c, position });
      i++;
      continue;
    }
    throw new SqlError(`Unexpected character '${c}' at position ${position}`, position);
  }
  tokens.push({ type: 'end', text: '', position: n + 1 });
  return tokens;
}

/** Reads text up to the closing character; a doubled closing character stands for one. */
function readQuoted(
  sql: string,
  openAt: number,
  close: string,
  what: string,
): { text: string; next: number } {
  let text = '';
  let i = openAt + 1;
  for (;;) {
    const end = sql.indexOf(close, i);
    if (end < 0) {
      throw new SqlError(`Unterminated ${what} starting at position ${openAt + 1}`, openAt + 1);
    }
    text += sql.slice(i, end);
    if (sql[end + 1] === close) {
      text += close;
      i = end + 2;
      continue;
    }
    return { text, next: end + 1 };
  }
}

function readNumber(sql: string, start: number, tokens: Token[]): number {
  let i = start;
  let decimal = false;
  while (DIGIT.test(sql[i] ?? '')) i++;
  if (sql[i] === '.') {
    decimal = true;
    i++;
    while (DIGIT.test(sql[i] ?? '')) i++;
  }
  if (sql[i] === 'e' || sql[i] === 'E') {
    let j = i + 1;
    if (sql[j] === '+' || sql[j] === '-') j++;
    if (!DIGIT.test(sql[j] ?? '')) {
      throw new SqlError(`Malformed number at position ${start + 1}: exponent has no digits`, start + 1);
    }
    while (DIGIT.test(sql[j] ?? '')) j++;
    decimal = true;
    i = j;
  }
  // "12abc" is a typo, not the number 12 followed by a name.
  if (i < sql.length && IDENT_PART.test(sql[i] as string)) {
    throw new SqlError(`Malformed number at position ${start + 1}: '${sql.slice(start, i + 1)}'`, start + 1);
  }
  tokens.push({ type: decimal ? 'decimal' : 'integer', text: sql.slice(start, i), position: start + 1 });
  return i;
}
