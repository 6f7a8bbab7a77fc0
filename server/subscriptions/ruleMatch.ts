// Which subscriptions a replayed copy would reach. The broker evaluates SQL filters itself and offers no
// "dry run", so the preview evaluates the filter forms the topology actually uses (DESIGN.md §3): `1=1`,
// `user.P = 'v'`, `user.P IS [NOT] NULL`, joined by AND. Anything else is answered 'unknown' rather than
// guessed, and the preview says so.

export type Match = 'yes' | 'no' | 'unknown';

type Props = Record<string, unknown>;

const TERM_EQ = /^user\.([A-Za-z_][A-Za-z0-9_]*)\s*=\s*'((?:[^']|'')*)'$/i;
const TERM_NULL = /^user\.([A-Za-z_][A-Za-z0-9_]*)\s+IS\s+(NOT\s+)?NULL$/i;
const TRUE_TERM = /^1\s*=\s*1$/;
const FALSE_TERM = /^1\s*=\s*0$/;

function stripParens(s: string): string {
  let t = s.trim();
  while (t.startsWith('(') && t.endsWith(')')) t = t.slice(1, -1).trim();
  return t;
}

/** Property lookup as the broker does it for `user.` names: exact name first, then case-insensitively. */
function prop(props: Props, name: string): unknown {
  if (name in props) return props[name];
  const key = Object.keys(props).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : props[key];
}

function term(t: string, props: Props): Match {
  const s = stripParens(t);
  if (TRUE_TERM.test(s)) return 'yes';
  if (FALSE_TERM.test(s)) return 'no';
  let m = TERM_EQ.exec(s);
  if (m) {
    const v = prop(props, m[1]!);
    return v != null && String(v) === m[2]!.replace(/''/g, "'") ? 'yes' : 'no';
  }
  m = TERM_NULL.exec(s);
  if (m) {
    const isNull = prop(props, m[1]!) == null;
    return (m[2] ? !isNull : isNull) ? 'yes' : 'no';
  }
  return 'unknown';
}

/** Evaluates one SQL filter against a message's application properties. */
export function sqlFilterMatches(sql: string, props: Props): Match {
  const body = stripParens(sql);
  if (/\bOR\b|\bNOT\s+\(|\bLIKE\b|\bIN\s*\(|[<>]/i.test(body)) return 'unknown';
  const terms = body.split(/\s+AND\s+/i);
  let result: Match = 'yes';
  for (const t of terms) {
    const r = term(t, props);
    if (r === 'no') return 'no';
    if (r === 'unknown') result = 'unknown';
  }
  return result;
}

/** A subscription matches when any of its rules does; 'unknown' when none says yes and one could not be evaluated. */
export function subscriptionMatches(filters: Array<string | undefined>, props: Props): Match {
  let result: Match = 'no';
  for (const f of filters) {
    const r = f === undefined ? 'unknown' : sqlFilterMatches(f, props);
    if (r === 'yes') return 'yes';
    if (r === 'unknown') result = 'unknown';
  }
  return result;
}
