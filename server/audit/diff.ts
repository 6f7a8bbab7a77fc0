// A small structural diff of two JSON values for the audit log: which paths were added, removed or changed, and
// the JSON type on each side - never the values themselves, since payloads can carry personal data and the audit
// log is read by more people than the payload is. Bounded so one huge edit cannot bloat an audit entry.

export type JsonType = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object' | 'undefined';

export interface DiffEntry {
  /** JSON-pointer-like path: `/items/0/price`; `` for the root. */
  path: string;
  op: 'added' | 'removed' | 'changed';
  from?: JsonType;
  to?: JsonType;
}

export interface JsonDiff {
  changes: DiffEntry[];
  /** True when there were more changes than reported. */
  truncated: boolean;
}

const MAX_CHANGES = 50;
const MAX_DEPTH = 32;

export function jsonType(v: unknown): JsonType {
  if (v === undefined) return 'undefined';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  const t = typeof v;
  return t === 'boolean' || t === 'number' || t === 'string' ? t : 'object';
}

const escape = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

export function diffJson(before: unknown, after: unknown, maxChanges = MAX_CHANGES): JsonDiff {
  const changes: DiffEntry[] = [];
  let truncated = false;
  const push = (e: DiffEntry) => {
    if (changes.length < maxChanges) changes.push(e);
    else truncated = true;
  };
  const walk = (a: unknown, b: unknown, path: string, depth: number) => {
    if (truncated) return;
    const ta = jsonType(a);
    const tb = jsonType(b);
    if (ta !== tb) {
      push({ path, op: 'changed', from: ta, to: tb });
      return;
    }
    if (ta === 'object' || ta === 'array') {
      if (depth >= MAX_DEPTH) {
        if (JSON.stringify(a) !== JSON.stringify(b)) push({ path, op: 'changed', from: ta, to: tb });
        return;
      }
      const oa = a as Record<string, unknown>;
      const ob = b as Record<string, unknown>;
      const keys = new Set([...Object.keys(oa), ...Object.keys(ob)]);
      for (const k of keys) {
        const p = `${path}/${escape(k)}`;
        if (!Object.hasOwn(ob, k)) push({ path: p, op: 'removed', from: jsonType(oa[k]) });
        else if (!Object.hasOwn(oa, k)) push({ path: p, op: 'added', to: jsonType(ob[k]) });
        else walk(oa[k], ob[k], p, depth + 1);
      }
      return;
    }
    if (!Object.is(a, b)) push({ path, op: 'changed', from: ta, to: tb });
  };
  walk(before, after, '', 0);
  return { changes, truncated };
}
