// What is wrong with an edited payload, each problem with its place in the text (offsets, line and column), so the
// editor can underline it and the dialog can say "Line 3, column 14: …". Syntax first (JSON.parse's verdict), then
// the event type's JSON Schema from the catalog, checked by the same code the server runs (payloadSchema.ts).
// Pure: no DOM, so it runs in the unit tests as it runs in the browser.
import { jsonLanguage } from '@codemirror/lang-json';
import type { ZodType } from 'zod';
import { compilePayloadSchema, formatPayloadPath, payloadIssues } from '@nimbus/sdk/contract';

export interface PayloadProblem {
  from: number;
  to: number;
  /** 1-based, as editors count. */
  line: number;
  column: number;
  /** "Line 3, column 14: …", ready to show. */
  message: string;
}

export type PayloadCheck = { ok: true; value: unknown; problems: [] } | { ok: false; problems: PayloadProblem[] };

/** A catalog schema ready to check against; null when the event type has none; an Error when it is unusable. */
export type CompiledSchema = ZodType | Error | null;

export function compileSchema(jsonSchema: Record<string, unknown> | null | undefined): CompiledSchema {
  return jsonSchema ? compilePayloadSchema(jsonSchema) : null;
}

function lineColumn(text: string, pos: number): { line: number; column: number } {
  const before = text.slice(0, pos);
  const line = before.split('\n').length;
  return { line, column: pos - (before.lastIndexOf('\n') + 1) + 1 };
}

function problem(text: string, from: number, to: number, what: string): PayloadProblem {
  const { line, column } = lineColumn(text, from);
  return { from, to: Math.max(to, from), line, column, message: `Line ${line}, column ${column}: ${what}` };
}

type Node = ReturnType<typeof jsonLanguage.parser.parse>['topNode'];

/** Where JSON.parse stopped: its message names the position in V8; else the parser's first error node; else the end. */
function syntaxErrorAt(text: string, message: string): number {
  const m = /at position (\d+)/.exec(message);
  if (m) return Math.min(Number(m[1]), text.length);
  let at = text.length;
  jsonLanguage.parser.parse(text).iterate({
    enter: (n) => {
      if (n.type.isError && n.from < at) at = n.from;
    },
  });
  return at;
}

function keyOf(text: string, node: Node | null): string | undefined {
  if (!node) return undefined;
  try {
    return JSON.parse(text.slice(node.from, node.to)) as string;
  } catch {
    return undefined;
  }
}

/**
 * The text range of the value at `path` in the parsed JSON: the property (name and value) for an object member,
 * the element for an array item. A path that does not exist (a missing required property) stops at its parent:
 * the parent object's opening brace.
 */
export function locatePath(text: string, path: ReadonlyArray<string | number>): { from: number; to: number } {
  let node: Node | null = jsonLanguage.parser.parse(text).topNode.firstChild;
  if (!node) return { from: 0, to: text.length };
  let range = { from: node.from, to: node.to };
  for (const key of path) {
    if (!node) break;
    if (node.name === 'Object' && typeof key === 'string') {
      const property: Node | undefined = node.getChildren('Property').find((p) => keyOf(text, p.getChild('PropertyName')) === key);
      if (!property) return { from: node.from, to: node.from + 1 };
      range = { from: property.from, to: property.to };
      node = property.getChild('PropertyName')?.nextSibling?.nextSibling ?? null; // name, ':', value
    } else if (node.name === 'Array' && typeof key === 'number') {
      const items: Node[] = [];
      for (let c = node.firstChild; c; c = c.nextSibling) if (!['[', ']', ','].includes(c.name)) items.push(c);
      const item = items[key];
      if (!item) return { from: node.from, to: node.from + 1 };
      range = { from: item.from, to: item.to };
      node = item;
    } else {
      break;
    }
  }
  return range;
}

/** Checks the text: JSON syntax, not empty or null, then the schema (when the event type has one). */
export function checkPayloadText(text: string, schema: CompiledSchema, eventTypeId = 'the event type'): PayloadCheck {
  if (text.trim() === '') return { ok: false, problems: [problem(text, 0, 0, 'The payload is empty.')] };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const raw = err instanceof Error ? err.message : String(err);
    const at = syntaxErrorAt(text, raw);
    // V8 appends "in JSON at position N (line L column C)"; the line and column are said once, in front.
    const what = raw.replace(/\s*in JSON at position \d+.*$/s, '').replace(/\s*\(line \d+ column \d+\)$/, '');
    return { ok: false, problems: [problem(text, at, Math.min(at + 1, text.length), `Invalid JSON: ${what}`)] };
  }
  if (value === null) return { ok: false, problems: [problem(text, 0, text.length, 'The payload must not be null.')] };
  if (schema instanceof Error)
    return { ok: false, problems: [problem(text, 0, 0, `The catalog's JSON schema of ${eventTypeId} cannot be checked: ${schema.message}`)] };
  if (schema) {
    const issues = payloadIssues(schema, value);
    if (issues.length > 0)
      return {
        ok: false,
        // In reading order, as the editor's underlines are.
        problems: issues
          .map((i) => {
            const r = locatePath(text, i.path);
            return problem(text, r.from, r.to, `${formatPayloadPath(i.path)}: ${i.message}`);
          })
          .sort((a, b) => a.from - b.from),
      };
  }
  return { ok: true, value, problems: [] };
}
