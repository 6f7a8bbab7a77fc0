// Syntax tree of a parsed filter or action. Parameters are already substituted as constants.

/** A runtime value. `null` stands for SQL NULL and for "unknown" (a missing property). */
export type SqlValue = string | number | boolean | Date | null;

/**
 * What the parser knows statically about a node's result, used to reject misplaced operands at compile time:
 * - cond: a predicate (TRUE/FALSE/unknown);
 * - bool: a boolean constant;
 * - other: a value that is never boolean (number, string, arithmetic, newid());
 * - any: a value whose type is only known at run time (property, property(), NULL).
 */
export type NodeKind = 'cond' | 'bool' | 'other' | 'any';

export type CompareOp = '=' | '<>' | '>' | '>=' | '<' | '<=';
export type ArithmeticOp = '+' | '-' | '*' | '/' | '%';

interface Base {
  kind: NodeKind;
  /** 1-based position in the SQL text, for error messages. */
  position: number;
  /** True when the value is statically known to be a double (decimal literal, or arithmetic involving one). */
  double?: boolean;
}

export interface PropertyRef {
  scope: 'user' | 'sys';
  /** User names keep their case; system names are lower-cased (and 'subject' is mapped to 'label'). */
  name: string;
}

export type Node =
  | (Base & { type: 'constant'; value: SqlValue })
  | (Base & { type: 'property'; ref: PropertyRef })
  | (Base & { type: 'newid' })
  | (Base & { type: 'propertyFunction'; argument: Node })
  | (Base & { type: 'negate'; operand: Node })
  | (Base & { type: 'arithmetic'; op: ArithmeticOp; left: Node; right: Node })
  | (Base & { type: 'compare'; op: CompareOp; left: Node; right: Node })
  | (Base & { type: 'and' | 'or'; left: Node; right: Node })
  | (Base & { type: 'not'; operand: Node })
  | (Base & { type: 'isNull'; operand: Node; negated: boolean })
  | (Base & { type: 'in'; operand: Node; list: Node[]; negated: boolean })
  | (Base & { type: 'like'; operand: Node; pattern: Node; escape: Node | undefined; negated: boolean })
  | (Base & { type: 'exists'; ref: PropertyRef });

export type Statement =
  | { type: 'set'; target: PropertyRef; value: Node; position: number }
  | { type: 'remove'; target: PropertyRef; position: number };
