// Compiles a syntax tree into a tree of closures, once per rule. Evaluation then walks closures only: no parsing,
// no eval, and no allocation on the common paths (property read, comparison with a constant, AND/OR).
//
// Values at run time are SqlValue; `null` is both SQL NULL and "unknown". Predicates return true, false or null.
// A compiled closure never throws because of what a message carries: odd values evaluate as unknown.

import { randomUUID } from 'node:crypto';
import { SqlError } from './api.ts';
import type { MessageView } from './api.ts';
import type { ArithmeticOp, CompareOp, Node, PropertyRef, SqlValue, Statement } from './ast.ts';
import { compileLikePattern } from './like.ts';
import type { StringMatcher } from './like.ts';
import { STRING_SYSTEM_PROPERTIES, normalizeSystemName } from './system-properties.ts';

export type Evaluator = (message: MessageView) => SqlValue;
export type Step = (message: MessageView) => void;

/** Maps whatever a message carries to a SQL value; anything without SQL semantics (buffers, arrays...) is unknown. */
export function toSqlValue(raw: unknown): SqlValue {
  switch (typeof raw) {
    case 'string':
    case 'number':
    case 'boolean':
      return raw;
    case 'bigint':
      return Number(raw);
    case 'object':
      return raw instanceof Date && !Number.isNaN(raw.getTime()) ? raw : null;
    default:
      return null;
  }
}

function readRaw(message: MessageView, ref: PropertyRef): unknown {
  return ref.scope === 'sys' ? message.getSystem(ref.name) : message.getUser(ref.name);
}

export function compileExpression(node: Node): Evaluator {
  switch (node.type) {
    case 'constant': {
      const value = node.value;
      return () => value;
    }
    case 'property': {
      const name = node.ref.name;
      return node.ref.scope === 'sys'
        ? (m) => toSqlValue(m.getSystem(name))
        : (m) => toSqlValue(m.getUser(name));
    }
    case 'newid':
      return () => randomUUID();
    case 'propertyFunction': {
      const argument = compileExpression(node.argument);
      return (m) => {
        const name = argument(m);
        return typeof name === 'string' ? readByName(m, name) : null;
      };
    }
    case 'negate': {
      const operand = compileExpression(node.operand);
      return (m) => {
        const v = operand(m);
        return typeof v === 'number' ? -v : null;
      };
    }
    case 'arithmetic':
      return compileArithmetic(
        node.op,
        compileExpression(node.left),
        compileExpression(node.right),
        node.double === true,
      );
    case 'compare':
      return compileCompare(node.op, node.left, node.right);
    case 'and': {
      const left = compileExpression(node.left);
      const right = compileExpression(node.right);
      return (m) => {
        const l = left(m);
        if (l === false) return false;
        const r = right(m);
        if (r === false) return false;
        return l === true && r === true ? true : null;
      };
    }
    case 'or': {
      const left = compileExpression(node.left);
      const right = compileExpression(node.right);
      return (m) => {
        const l = left(m);
        if (l === true) return true;
        const r = right(m);
        if (r === true) return true;
        return l === false && r === false ? false : null;
      };
    }
    case 'not': {
      const operand = compileExpression(node.operand);
      return (m) => {
        const v = operand(m);
        return v === true ? false : v === false ? true : null;
      };
    }
    case 'isNull':
      return compileIsNull(node.operand, node.negated);
    case 'in':
      return compileIn(node.operand, node.list, node.negated);
    case 'like':
      return compileLike(node.operand, node.pattern, node.escape, node.negated);
    case 'exists': {
      const name = node.ref.name;
      return node.ref.scope === 'sys' ? (m) => m.getSystem(name) !== undefined : (m) => m.hasUser(name);
    }
  }
}

/** property('sys.Label') / property('Color'): a name computed at run time; an unknown system name is unknown. */
function readByName(m: MessageView, name: string): SqlValue {
  const dot = name.indexOf('.');
  if (dot > 0) {
    const scope = name.slice(0, dot).toLowerCase();
    const rest = name.slice(dot + 1);
    if (scope === 'sys') {
      const canonical = normalizeSystemName(rest);
      return canonical === undefined ? null : toSqlValue(m.getSystem(canonical));
    }
    if (scope === 'user') return toSqlValue(m.getUser(rest));
  }
  return toSqlValue(m.getUser(name));
}

// ---- comparison ----

/** Three-valued comparison with C#-like typing: numbers with numbers, strings with strings (ordinal), dates with
 * dates, booleans only for = and <>. Any other pairing (e.g. string with number) is unknown, not an error. */
export function compareValues(op: CompareOp, a: SqlValue, b: SqlValue): boolean | null {
  if (a === null || b === null) return null;
  let x: number | string;
  let y: number | string;
  if (typeof a === 'number' && typeof b === 'number') {
    x = a;
    y = b;
  } else if (typeof a === 'string' && typeof b === 'string') {
    x = a;
    y = b;
  } else if (a instanceof Date && b instanceof Date) {
    x = a.getTime();
    y = b.getTime();
  } else if (typeof a === 'boolean' && typeof b === 'boolean') {
    if (op === '=') return a === b;
    if (op === '<>') return a !== b;
    return null;
  } else {
    return null;
  }
  switch (op) {
    case '=':
      return x === y;
    case '<>':
      return x !== y;
    case '>':
      return x > y;
    case '>=':
      return x >= y;
    case '<':
      return x < y;
    case '<=':
      return x <= y;
  }
}

function compileCompare(op: CompareOp, leftNode: Node, rightNode: Node): Evaluator {
  const left = compileExpression(leftNode);
  // Fast paths for "property = 'constant'" and "property <> 'constant'", the shape of nearly every routing rule.
  if (rightNode.type === 'constant' && typeof rightNode.value === 'string' && (op === '=' || op === '<>')) {
    const constant = rightNode.value;
    return op === '='
      ? (m) => {
          const v = left(m);
          return typeof v === 'string' ? v === constant : null;
        }
      : (m) => {
          const v = left(m);
          return typeof v === 'string' ? v !== constant : null;
        };
  }
  const right = compileExpression(rightNode);
  return (m) => compareValues(op, left(m), right(m));
}

// ---- arithmetic ----

/** Text of a value when concatenated to a string, the way .NET formats it. */
export function toText(v: Exclude<SqlValue, null>): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (v instanceof Date) return v.toISOString();
  return String(v);
}

export function arithmeticValues(op: ArithmeticOp, a: SqlValue, b: SqlValue, forceDouble: boolean): SqlValue {
  if (a === null || b === null) return null;
  if (typeof a === 'number' && typeof b === 'number') {
    switch (op) {
      case '+':
        return a + b;
      case '-':
        return a - b;
      case '*':
        return a * b;
      case '/':
        if (!forceDouble && Number.isInteger(a) && Number.isInteger(b)) {
          // Integer division truncates, as Int64 does on Azure; dividing by zero is unknown rather than a crash.
          return b === 0 ? null : Math.trunc(a / b);
        }
        return a / b;
      case '%':
        if (!forceDouble && Number.isInteger(a) && Number.isInteger(b) && b === 0) return null;
        return a % b;
    }
  }
  if (op === '+' && (typeof a === 'string' || typeof b === 'string')) {
    // C# string concatenation: a string plus a number or boolean concatenates their text.
    if (a instanceof Date || b instanceof Date) return null;
    return toText(a) + toText(b);
  }
  return null;
}

function compileArithmetic(
  op: ArithmeticOp,
  left: Evaluator,
  right: Evaluator,
  forceDouble: boolean,
): Evaluator {
  return (m) => arithmeticValues(op, left(m), right(m), forceDouble);
}

// ---- IS NULL, IN, LIKE ----

function compileIsNull(operandNode: Node, negated: boolean): Evaluator {
  if (operandNode.type === 'property') {
    // Look at the raw value: a property holding something we cannot compare (a buffer, say) still is not NULL.
    const ref = operandNode.ref;
    return negated
      ? (m) => {
          const raw = readRaw(m, ref);
          return raw !== undefined && raw !== null;
        }
      : (m) => {
          const raw = readRaw(m, ref);
          return raw === undefined || raw === null;
        };
  }
  const operand = compileExpression(operandNode);
  return negated ? (m) => operand(m) !== null : (m) => operand(m) === null;
}

function compileIn(operandNode: Node, listNodes: Node[], negated: boolean): Evaluator {
  const operand = compileExpression(operandNode);
  const allPrimitiveConstants = listNodes.every(
    (n) =>
      n.type === 'constant' &&
      (typeof n.value === 'string' ||
        typeof n.value === 'boolean' ||
        (typeof n.value === 'number' && !Number.isNaN(n.value))),
  );
  if (allPrimitiveConstants) {
    // Set membership uses SameValueZero: 1 matches 1.0, '1' does not match 1 - the typed equality we want.
    const set = new Set<SqlValue>(listNodes.map((n) => (n.type === 'constant' ? n.value : null)));
    return (m) => {
      const v = operand(m);
      if (v === null) return null;
      return set.has(v) !== negated;
    };
  }
  const list = listNodes.map(compileExpression);
  return (m) => {
    const v = operand(m);
    if (v === null) return null;
    let found = false;
    for (let i = 0; i < list.length && !found; i++) {
      found = compareValues('=', v, (list[i] as Evaluator)(m)) === true;
    }
    return found !== negated;
  };
}

function compileLike(
  operandNode: Node,
  patternNode: Node,
  escapeNode: Node | undefined,
  negated: boolean,
): Evaluator {
  const operand = compileExpression(operandNode);
  const constantPattern = patternNode.type === 'constant';
  const constantEscape = escapeNode === undefined || escapeNode.type === 'constant';

  if (constantPattern && constantEscape) {
    const pattern = patternNode.value;
    const escape = escapeNode?.type === 'constant' ? escapeNode.value : undefined;
    if (pattern === null || escape === null) return () => null; // LIKE NULL is unknown
    if (typeof pattern !== 'string') {
      throw new SqlError(
        `The LIKE pattern at position ${patternNode.position} must be a string`,
        patternNode.position,
      );
    }
    if (escape !== undefined && (typeof escape !== 'string' || escape.length !== 1)) {
      const position = escapeNode?.position;
      throw new SqlError(`The ESCAPE value at position ${position} must be a single character`, position);
    }
    let matcher: StringMatcher;
    try {
      matcher = compileLikePattern(pattern, escape);
    } catch (error) {
      if (error instanceof SqlError)
        throw new SqlError(`${error.message} (position ${patternNode.position})`, patternNode.position);
      throw error;
    }
    return (m) => {
      const v = operand(m);
      return typeof v === 'string' ? matcher(v) !== negated : null;
    };
  }

  // Pattern or escape computed from the message: compile per distinct pattern, caching the last one.
  const patternOf = compileExpression(patternNode);
  const escapeOf = escapeNode ? compileExpression(escapeNode) : undefined;
  let cachedKey: string | undefined;
  let cachedMatcher: StringMatcher | null = null;
  return (m) => {
    const v = operand(m);
    const pattern = patternOf(m);
    const escape = escapeOf ? escapeOf(m) : undefined;
    if (typeof v !== 'string' || typeof pattern !== 'string') return null;
    if (escape !== undefined && (typeof escape !== 'string' || escape.length !== 1)) return null;
    const key = escape === undefined ? `0${pattern}` : `1${escape}${pattern}`;
    if (key !== cachedKey) {
      cachedKey = key;
      try {
        cachedMatcher = compileLikePattern(pattern, escape);
      } catch {
        cachedMatcher = null; // a pattern ending in its escape character: unknown, not a crash
      }
    }
    return cachedMatcher === null ? null : cachedMatcher(v) !== negated;
  };
}

// ---- actions ----

export function compileStatement(statement: Statement): Step {
  const target = statement.target;
  if (statement.type === 'remove') {
    const name = target.name;
    return (m) => m.removeUser(name);
  }
  const value = compileExpression(statement.value);
  const name = target.name;
  if (target.scope === 'user') return (m) => m.setUser(name, value(m));
  if (STRING_SYSTEM_PROPERTIES.has(name)) {
    // These hold text on Azure: a number or boolean assigned to them is stored as its text.
    return (m) => {
      const v = value(m);
      m.setSystem(name, v === null || typeof v === 'string' ? v : toText(v));
    };
  }
  return (m) => m.setSystem(name, value(m));
}
