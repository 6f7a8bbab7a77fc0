// Recursive-descent parser for Service Bus SQL filters and actions.
// Precedence, loosest first: OR, AND, NOT, predicates (comparison, IS NULL, IN, LIKE, EXISTS), + -, * / %, unary + -.

import type { SqlParameters } from '../broker/api.ts';
import { SqlError } from './api.ts';
import type { ArithmeticOp, CompareOp, Node, NodeKind, PropertyRef, SqlValue, Statement } from './ast.ts';
import { KEYWORDS, tokenize } from './lexer.ts';
import type { Token } from './lexer.ts';
import { isWritableSystemProperty, normalizeSystemName } from './system-properties.ts';

const COMPARE_OPS = new Set(['=', '<>', '!=', '>', '>=', '<', '<=']);
const INT64_MAX = 9223372036854775807n;

export function parseFilter(sql: string, parameters: SqlParameters | undefined): Node {
  const parser = new Parser(sql, parameters);
  if (parser.peek().type === 'end') throw new SqlError('The filter expression is empty', 1);
  const node = parser.condition(parser.parseOr());
  parser.expectEnd();
  return node;
}

export function parseAction(sql: string, parameters: SqlParameters | undefined): Statement[] {
  const parser = new Parser(sql, parameters);
  const statements = parser.parseStatements();
  if (statements.length === 0) throw new SqlError('The action is empty: expected SET or REMOVE', 1);
  return statements;
}

class Parser {
  private readonly tokens: Token[];
  private index = 0;
  private readonly parameters: Map<string, unknown>;

  constructor(sql: string, parameters: SqlParameters | undefined) {
    this.tokens = tokenize(sql);
    this.parameters = normalizeParameters(parameters);
  }

  peek(offset = 0): Token {
    return this.tokens[Math.min(this.index + offset, this.tokens.length - 1)] as Token;
  }

  private next(): Token {
    const token = this.peek();
    if (token.type !== 'end') this.index++;
    return token;
  }

  private isKeyword(word: string, offset = 0): boolean {
    const token = this.peek(offset);
    return token.type === 'identifier' && token.text.toUpperCase() === word;
  }

  private isOperator(symbol: string): boolean {
    const token = this.peek();
    return token.type === 'operator' && token.text === symbol;
  }

  private acceptKeyword(word: string): boolean {
    if (!this.isKeyword(word)) return false;
    this.index++;
    return true;
  }

  private acceptOperator(symbol: string): boolean {
    if (!this.isOperator(symbol)) return false;
    this.index++;
    return true;
  }

  private expectOperator(symbol: string, context: string): void {
    if (!this.acceptOperator(symbol)) throw this.unexpected(`expected '${symbol}' ${context}`);
  }

  unexpected(expectation: string, token: Token = this.peek()): SqlError {
    return new SqlError(
      `Unexpected ${describe(token)} at position ${token.position}: ${expectation}`,
      token.position,
    );
  }

  expectEnd(): void {
    if (this.peek().type !== 'end') throw this.unexpected('expected end of expression');
  }

  // ---- actions ----

  parseStatements(): Statement[] {
    const statements: Statement[] = [];
    for (;;) {
      while (this.acceptOperator(';'));
      const token = this.peek();
      if (token.type === 'end') return statements;
      if (this.acceptKeyword('SET')) {
        const target = this.parseTarget('SET');
        this.expectOperator('=', 'after the property name in SET');
        const value = this.value(this.parseOr());
        statements.push({ type: 'set', target, value, position: token.position });
      } else if (this.acceptKeyword('REMOVE')) {
        const target = this.parseTarget('REMOVE');
        if (target.scope === 'sys') {
          throw new SqlError(
            `REMOVE at position ${token.position} applies to user properties only; use SET sys.<name> = NULL to clear a system property`,
            token.position,
          );
        }
        statements.push({ type: 'remove', target, position: token.position });
      } else {
        throw this.unexpected(
          statements.length === 0 ? 'expected SET or REMOVE' : "expected ';', SET or REMOVE",
        );
      }
    }
  }

  private parseTarget(verb: string): PropertyRef {
    const token = this.peek();
    const ref = this.tryParsePropertyRef();
    if (!ref) throw this.unexpected(`expected a property name after ${verb}`);
    if (ref.scope === 'sys' && !isWritableSystemProperty(ref.name)) {
      throw new SqlError(
        `System property sys.${ref.name} at position ${token.position} is read-only and cannot be changed by an action`,
        token.position,
      );
    }
    return ref;
  }

  // ---- predicates ----

  parseOr(): Node {
    let left = this.parseAnd();
    while (this.isKeyword('OR')) {
      const position = this.next().position;
      const right = this.condition(this.parseAnd());
      left = { type: 'or', kind: 'cond', position, left: this.condition(left), right };
    }
    return left;
  }

  private parseAnd(): Node {
    let left = this.parseNot();
    while (this.isKeyword('AND')) {
      const position = this.next().position;
      const right = this.condition(this.parseNot());
      left = { type: 'and', kind: 'cond', position, left: this.condition(left), right };
    }
    return left;
  }

  private parseNot(): Node {
    if (this.isKeyword('NOT')) {
      const position = this.next().position;
      const operand = this.condition(this.parseNot());
      return { type: 'not', kind: 'cond', position, operand };
    }
    return this.parsePredicate();
  }

  private parsePredicate(): Node {
    if (this.isKeyword('EXISTS')) {
      const position = this.next().position;
      this.expectOperator('(', 'after EXISTS');
      const ref = this.tryParsePropertyRef();
      if (!ref) throw this.unexpected('expected a property name inside EXISTS( )');
      this.expectOperator(')', 'to close EXISTS(');
      return { type: 'exists', kind: 'cond', position, ref };
    }

    const left = this.parseAdditive();
    const token = this.peek();

    if (token.type === 'operator' && COMPARE_OPS.has(token.text)) {
      this.index++;
      const op = (token.text === '!=' ? '<>' : token.text) as CompareOp;
      const right = this.value(this.parseAdditive());
      return { type: 'compare', kind: 'cond', position: token.position, op, left: this.value(left), right };
    }
    if (this.isKeyword('IS')) {
      this.index++;
      const negated = this.acceptKeyword('NOT');
      if (!this.acceptKeyword('NULL'))
        throw this.unexpected(negated ? 'expected NULL after IS NOT' : 'expected NULL or NOT NULL after IS');
      return { type: 'isNull', kind: 'cond', position: token.position, operand: this.value(left), negated };
    }
    let negated = false;
    if (this.isKeyword('NOT')) {
      if (!this.isKeyword('IN', 1) && !this.isKeyword('LIKE', 1)) {
        throw this.unexpected('expected IN or LIKE after NOT', this.peek(1));
      }
      this.index++;
      negated = true;
    }
    if (this.acceptKeyword('IN')) {
      this.expectOperator('(', 'to start the IN list');
      const list: Node[] = [this.value(this.parseAdditive())];
      while (this.acceptOperator(',')) list.push(this.value(this.parseAdditive()));
      this.expectOperator(')', 'to close the IN list');
      return { type: 'in', kind: 'cond', position: token.position, operand: this.value(left), list, negated };
    }
    if (this.acceptKeyword('LIKE')) {
      const pattern = this.value(this.parseAdditive());
      const escape = this.acceptKeyword('ESCAPE') ? this.value(this.parseAdditive()) : undefined;
      return {
        type: 'like',
        kind: 'cond',
        position: token.position,
        operand: this.value(left),
        pattern,
        escape,
        negated,
      };
    }
    return left;
  }

  // ---- expressions ----

  private parseAdditive(): Node {
    let left = this.parseMultiplicative();
    for (;;) {
      const token = this.peek();
      if (token.type !== 'operator' || (token.text !== '+' && token.text !== '-')) return left;
      this.index++;
      const right = this.value(this.parseMultiplicative());
      left = arithmetic(token.text, this.value(left), right, token.position);
    }
  }

  private parseMultiplicative(): Node {
    let left = this.parseUnary();
    for (;;) {
      const token = this.peek();
      if (token.type !== 'operator' || (token.text !== '*' && token.text !== '/' && token.text !== '%'))
        return left;
      this.index++;
      const right = this.value(this.parseUnary());
      left = arithmetic(token.text, this.value(left), right, token.position);
    }
  }

  private parseUnary(): Node {
    const token = this.peek();
    if (token.type === 'operator' && (token.text === '-' || token.text === '+')) {
      this.index++;
      const operand = this.value(this.parseUnary());
      if (token.text === '+') return operand;
      // Fold "-literal" so that a negative constant costs nothing at evaluation time.
      if (operand.type === 'constant' && typeof operand.value === 'number') {
        return { ...operand, value: -operand.value, position: token.position };
      }
      return { type: 'negate', kind: 'other', position: token.position, operand, double: operand.double };
    }
    return this.parsePrimary();
  }

  private parsePrimary(): Node {
    const token = this.peek();
    switch (token.type) {
      case 'operator':
        if (token.text === '(') {
          this.index++;
          const inner = this.parseOr();
          this.expectOperator(')', 'to close the parenthesis');
          return inner;
        }
        throw this.unexpected('expected an expression');
      case 'string':
        this.index++;
        return { type: 'constant', kind: 'other', position: token.position, value: token.text };
      case 'integer': {
        this.index++;
        if (BigInt(token.text) > INT64_MAX) {
          throw new SqlError(
            `Integer constant ${token.text} at position ${token.position} is out of the 64-bit range`,
            token.position,
          );
        }
        return { type: 'constant', kind: 'other', position: token.position, value: Number(token.text) };
      }
      case 'decimal': {
        this.index++;
        const value = Number(token.text);
        if (!Number.isFinite(value)) {
          throw new SqlError(
            `Number ${token.text} at position ${token.position} is out of range`,
            token.position,
          );
        }
        return { type: 'constant', kind: 'other', position: token.position, value, double: true };
      }
      case 'parameter':
        this.index++;
        return this.parameterConstant(token);
      case 'identifier': {
        const upper = token.text.toUpperCase();
        if (upper === 'TRUE' || upper === 'FALSE') {
          this.index++;
          return { type: 'constant', kind: 'bool', position: token.position, value: upper === 'TRUE' };
        }
        if (upper === 'NULL') {
          this.index++;
          return { type: 'constant', kind: 'any', position: token.position, value: null };
        }
        const next = this.peek(1);
        if (next.type === 'operator' && next.text === '(' && !KEYWORDS.has(upper))
          return this.parseFunction();
        break;
      }
      case 'quotedIdentifier':
      case 'delimitedIdentifier':
        break;
      case 'end':
        throw this.unexpected('expected an expression');
    }
    const ref = this.tryParsePropertyRef();
    if (!ref) throw this.unexpected('expected an expression');
    return { type: 'property', kind: 'any', position: token.position, ref };
  }

  private parseFunction(): Node {
    const token = this.next();
    const name = token.text.toLowerCase();
    this.expectOperator('(', `after ${token.text}`);
    if (name === 'newid') {
      this.expectOperator(')', 'newid() takes no arguments');
      return { type: 'newid', kind: 'other', position: token.position };
    }
    if (name === 'property' || name === 'p') {
      const argument = this.value(this.parseAdditive());
      this.expectOperator(')', `to close ${token.text}(`);
      return { type: 'propertyFunction', kind: 'any', position: token.position, argument };
    }
    throw new SqlError(
      `Unknown function '${token.text}' at position ${token.position}: supported functions are newid() and property(name)`,
      token.position,
    );
  }

  /** [sys. | user.] name, where name is a regular, "quoted" or [delimited] identifier. Undefined if none is here. */
  private tryParsePropertyRef(): PropertyRef | undefined {
    const token = this.peek();
    if (token.type === 'quotedIdentifier' || token.type === 'delimitedIdentifier') {
      this.index++;
      return { scope: 'user', name: token.text };
    }
    if (token.type !== 'identifier') return undefined;
    const lower = token.text.toLowerCase();
    const dot = this.peek(1);
    if ((lower === 'sys' || lower === 'user') && dot.type === 'operator' && dot.text === '.') {
      this.index += 2;
      const nameToken = this.peek();
      // After a scope, any word is a name: user.From, user.Set and sys.To need no brackets.
      if (
        nameToken.type !== 'identifier' &&
        nameToken.type !== 'quotedIdentifier' &&
        nameToken.type !== 'delimitedIdentifier'
      ) {
        throw this.unexpected(`expected a property name after '${token.text}.'`);
      }
      this.index++;
      if (lower === 'user') return { scope: 'user', name: nameToken.text };
      const canonical = normalizeSystemName(nameToken.text);
      if (canonical === undefined) {
        throw new SqlError(
          `Unknown system property 'sys.${nameToken.text}' at position ${token.position}`,
          token.position,
        );
      }
      return { scope: 'sys', name: canonical };
    }
    if (KEYWORDS.has(token.text.toUpperCase())) return undefined;
    this.index++;
    return { scope: 'user', name: token.text };
  }

  private parameterConstant(token: Token): Node {
    const key = token.text.slice(1);
    if (!this.parameters.has(key.toLowerCase())) {
      throw new SqlError(
        `Parameter '${token.text}' at position ${token.position} has no value in the rule's parameters`,
        token.position,
      );
    }
    const raw = this.parameters.get(key.toLowerCase());
    const value = parameterValue(raw);
    if (value === undefined) {
      throw new SqlError(
        `Parameter '${token.text}' at position ${token.position} has an unsupported value type (${typeof raw}): use a string, number, boolean, date or null`,
        token.position,
      );
    }
    const kind: NodeKind = value === null ? 'any' : typeof value === 'boolean' ? 'bool' : 'other';
    const double = typeof value === 'number' && !Number.isInteger(value);
    return { type: 'constant', kind, position: token.position, value, double };
  }

  // ---- operand checks ----

  /** An operand of AND/OR/NOT or a whole filter: must be able to yield TRUE. */
  condition(node: Node): Node {
    if (node.kind === 'other') {
      throw new SqlError(
        `Expected a condition at position ${node.position}, found a value that is never TRUE or FALSE`,
        node.position,
      );
    }
    return node;
  }

  /** An operand of a comparison, arithmetic, IN, LIKE or SET: a predicate is not a value in this dialect. */
  value(node: Node): Node {
    if (node.kind === 'cond') {
      throw new SqlError(`Expected a value at position ${node.position}, found a condition`, node.position);
    }
    return node;
  }
}

function arithmetic(op: ArithmeticOp, left: Node, right: Node, position: number): Node {
  const double = left.double === true || right.double === true;
  return { type: 'arithmetic', kind: 'other', position, op, left, right, double };
}

function describe(token: Token): string {
  switch (token.type) {
    case 'end':
      return 'end of input';
    case 'string':
      return `string '${token.text}'`;
    case 'quotedIdentifier':
      return `name "${token.text}"`;
    case 'delimitedIdentifier':
      return `name [${token.text}]`;
    case 'integer':
    case 'decimal':
      return `number ${token.text}`;
    case 'parameter':
      return `parameter '${token.text}'`;
    default:
      return `token '${token.text}'`;
  }
}

/** Parameter names are matched without the '@' and case-insensitively; the admin client sends '@name' keys. */
function normalizeParameters(parameters: SqlParameters | undefined): Map<string, unknown> {
  const map = new Map<string, unknown>();
  if (!parameters) return map;
  for (const [key, value] of Object.entries(parameters)) {
    const bare = key.startsWith('@') ? key.slice(1) : key;
    map.set(bare.toLowerCase(), value);
  }
  return map;
}

function parameterValue(raw: unknown): SqlValue | undefined {
  if (raw === null) return null;
  if (typeof raw === 'string' || typeof raw === 'boolean') return raw;
  if (typeof raw === 'number') return raw;
  if (typeof raw === 'bigint') return Number(raw);
  if (raw instanceof Date) return Number.isNaN(raw.getTime()) ? undefined : raw;
  return undefined;
}
