// What "settled correctly after a fault" means, as a pure check over what the chaos test collected (rows, history,
// counters, the events the broker fanned out, dead letters). Kept apart from e2e/chaos.test.ts so the rules can be
// read (and unit-tested) without the stack, and so the failure report names, per violating event, its status,
// the tail of its history and why it violates.
import { isRequestType, type MessageType } from '@nimbus/sdk/contract';
import type { HistoryEntry, StatusRowSummary } from '../lib/store/index.ts';

/** An event as a producer put it on its topic (seen by the test's tap with the forwarders' own filter). */
export interface PublishedEvent {
  producer: string;
  eventTypeId: string;
  messageId: string;
  sessionId: string;
}

/** A dead letter found in some subscription's dead-letter queue (diagnostics only: it never satisfies a check). */
export interface DeadLetterNote {
  entity: string;
  messageId: string;
  eventId?: string;
  messageType?: string;
  reason?: string;
  description?: string;
}

export interface ChaosEvidence {
  now: Date;
  /** Every status row of every endpoint. */
  rows: StatusRowSummary[];
  /** History entries by event id. */
  history: Map<string, HistoryEntry[]>;
  /** The stored counters' raw buckets per endpoint. */
  counters: Map<string, Record<string, number>>;
  published: PublishedEvent[];
  consumersOf: (eventTypeId: string) => string[];
  deadLetters: DeadLetterNote[];
  /** Warnings the parts logged that name an event (diagnostics only). */
  logs?: Array<{ component: string; msg: string; eventId?: string; err?: string }>;
}

export type Invariant =
  /** The row's status is final and true, or it waits on something live (a handoff, a failure an operator owns). */
  | 'settled'
  /** Every event a producer published has a row at each of its consumers. */
  | 'recorded'
  /** The stored counters equal a recount of the rows. */
  | 'counters'
  /** Every answer the Resolver recorded to the message a row shows is on that row (history is written first). */
  | 'applied';

export interface Violation {
  invariant: Invariant;
  endpointId: string;
  eventId?: string;
  sessionId?: string;
  status?: string;
  why: string;
  /** A short root-cause label for grouping the report (e.g. the dead-letter reason that stranded the row). */
  cause?: string;
}

const TERMINAL = new Set(['Completed', 'Failed', 'Skipped', 'DeadLettered', 'Unsupported']);

const nonEmpty = (s: string | null | undefined) => typeof s === 'string' && s.trim() !== '';

/** A Pending handoff whose expected-by is still ahead: the external job may yet report. */
export function isLiveHandoff(row: StatusRowSummary, now: Date): boolean {
  return (
    row.status === 'Pending' &&
    row.subStatus === 'Handoff' &&
    row.expectedBy !== null &&
    Date.parse(row.expectedBy) > now.getTime()
  );
}

/** The counter bucket a row belongs to (docs/store.md, Counters). */
export const bucketOf = (row: StatusRowSummary): string =>
  row.status === 'Pending' && row.subStatus === 'Handoff' ? 'Handoff' : row.status;

export function checkChaosInvariants(e: ChaosEvidence): Violation[] {
  const violations: Violation[] = [];
  const at = (row: StatusRowSummary, why: string): Violation => ({
    invariant: 'settled',
    endpointId: row.endpointId,
    eventId: row.eventId,
    sessionId: row.sessionId,
    status: row.subStatus ? `${row.status}/${row.subStatus}` : row.status,
    why,
  });

  // What blocks a session at an endpoint: a Failed event (waits for an operator) or a live handoff.
  const blockers = new Map<string, StatusRowSummary[]>();
  for (const row of e.rows) {
    if (row.status === 'Failed' || isLiveHandoff(row, e.now)) {
      const key = `${row.endpointId}\u0000${row.sessionId}`;
      blockers.set(key, [...(blockers.get(key) ?? []), row]);
    }
  }

  for (const row of e.rows) {
    if (TERMINAL.has(row.status)) {
      if (row.status === 'Failed' && !nonEmpty(row.errorText))
        violations.push(at(row, 'Failed without an error text: an operator cannot tell why'));
      if (
        row.status === 'DeadLettered' &&
        !nonEmpty(row.deadLetterErrorDescription) &&
        !nonEmpty(row.deadLetterReason)
      )
        violations.push(at(row, 'DeadLettered without a reason or description'));
      continue;
    }
    if (row.status === 'Pending' && row.subStatus === 'Handoff') {
      if (isLiveHandoff(row, e.now)) continue;
      violations.push(
        at(
          row,
          row.expectedBy
            ? `handoff overdue since ${row.expectedBy}: no HandoffCompleted/FailedRequest was recorded`
            : 'handoff without an expected-by time',
        ),
      );
      continue;
    }
    if (row.status === 'Deferred') {
      const blockedBy = (blockers.get(`${row.endpointId}\u0000${row.sessionId}`) ?? []).filter(
        (b) => b.eventId !== row.eventId,
      );
      if (blockedBy.length > 0) continue;
      const stuck = e.rows.filter(
        (o) =>
          o.endpointId === row.endpointId &&
          o.sessionId === row.sessionId &&
          o.eventId !== row.eventId &&
          o.status === 'Pending',
      );
      violations.push(
        at(
          row,
          stuck.length > 0
            ? `Deferred behind ${stuck.map((o) => `${o.eventId} (${o.subStatus ? 'overdue handoff' : 'Pending'})`).join(', ')}, which will not settle by itself`
            : 'Deferred, but no Failed event or live handoff blocks its session: it will never be replayed',
        ),
      );
      continue;
    }
    // The Resolver records an answer's history entry before it writes the row (store.recordOutcome): a row whose
    // own history already holds the answer to the message the row shows is being moved, not stranded.
    const answer =
      row.status === 'Pending'
        ? (e.history.get(row.eventId) ?? []).find(
            (h) =>
              h.endpointId === row.endpointId &&
              h.sessionId === row.sessionId &&
              h.parentMessageId === row.lastMessageId &&
              !isRequestType(h.messageType as MessageType),
          )
        : undefined;
    if (answer) {
      violations.push({
        ...at(
          row,
          `Pending (last written by ${row.messageType ?? 'nothing'}), but its history holds ${answer.messageType} ${answer.messageId} answering it: recorded, not applied (yet)`,
        ),
        invariant: 'applied',
      });
      continue;
    }
    violations.push(
      at(
        row,
        row.status === 'Pending'
          ? `Pending (last written by ${row.messageType ?? 'nothing'}) with no live handoff: nothing will move it`
          : `unexpected status ${row.status}`,
      ),
    );
  }

  for (const v of violations) v.cause = causeOf(v, e);

  // Every published event reached each consumer's row (its EventRequest copy is in some event's history there).
  const seenAt = new Set<string>();
  for (const entries of e.history.values())
    for (const h of entries)
      if (h.messageType === 'EventRequest') seenAt.add(`${h.endpointId}\u0000${h.messageId}`);
  for (const p of e.published) {
    for (const consumer of e.consumersOf(p.eventTypeId)) {
      if (seenAt.has(`${consumer}\u0000${p.messageId}`)) continue;
      const dead = e.deadLetters.filter((d) => d.messageId === p.messageId);
      violations.push({
        invariant: 'recorded',
        endpointId: consumer,
        sessionId: p.sessionId,
        why:
          `${p.eventTypeId} ${p.messageId} published by ${p.producer} has no row at ${consumer}` +
          (dead.length > 0
            ? ` (dead letters with its MessageId: ${dead.map((d) => `${d.entity}: ${d.reason ?? '?'}`).join('; ')})`
            : ' (no dead letter with its MessageId either)'),
      });
    }
  }

  // Counters agree with the rows.
  const recount = new Map<string, Record<string, number>>();
  for (const row of e.rows) {
    const buckets = recount.get(row.endpointId) ?? {};
    buckets[bucketOf(row)] = (buckets[bucketOf(row)] ?? 0) + 1;
    recount.set(row.endpointId, buckets);
  }
  for (const endpointId of new Set([...recount.keys(), ...e.counters.keys()])) {
    const rows = recount.get(endpointId) ?? {};
    const stored = e.counters.get(endpointId) ?? {};
    const diffs = [...new Set([...Object.keys(rows), ...Object.keys(stored)])]
      .filter((b) => (rows[b] ?? 0) !== (stored[b] ?? 0))
      .map((b) => `${b}: counter ${stored[b] ?? 0}, rows ${rows[b] ?? 0}`);
    if (diffs.length > 0)
      violations.push({
        invariant: 'counters',
        endpointId,
        why: `counters disagree with the rows (${diffs.join('; ')})`,
      });
  }
  return violations;
}

function causeOf(v: Violation, e: ChaosEvidence): string {
  const dead = e.deadLetters.filter((d) => d.eventId !== undefined && d.eventId === v.eventId);
  if (dead.length > 0)
    return `${v.status}: a copy was dead-lettered (${[...new Set(dead.map((d) => `${d.entity.split('/')[1]} ${d.reason ?? '?'}`))].join(', ')}) and the row never heard of it`;
  if (v.status === 'Pending/Handoff') {
    const lost = e.logs?.some((l) => l.eventId === v.eventId && /ledger import result failed/.test(l.msg));
    return lost
      ? 'Pending/Handoff: the external job could not report (broker down) and gave up'
      : 'Pending/Handoff: overdue, no report recorded';
  }
  if (v.status === 'Deferred')
    return v.why.startsWith('Deferred behind')
      ? 'Deferred behind a stuck event'
      : 'Deferred in a session nothing blocks (draining forever?)';
  return `${v.status}: ${v.why.split(':')[0]}`;
}

/** One paragraph per violation: status, why, the history tail and any dead letters of the event. */
export function formatViolations(violations: Violation[], e: ChaosEvidence, tail = 8): string {
  const lines: string[] = [];
  const byInvariant = new Map<Invariant, number>();
  for (const v of violations) byInvariant.set(v.invariant, (byInvariant.get(v.invariant) ?? 0) + 1);
  lines.push(
    `${violations.length} violation(s): ${[...byInvariant].map(([k, n]) => `${k} ${n}`).join(', ')}`,
  );
  const byCause = new Map<string, number>();
  for (const v of violations) if (v.cause) byCause.set(v.cause, (byCause.get(v.cause) ?? 0) + 1);
  for (const [cause, n] of [...byCause].sort((a, b) => b[1] - a[1])) lines.push(`  ×${n} ${cause}`);
  lines.push('');
  for (const v of violations) {
    const head = v.eventId
      ? `[${v.invariant}] ${v.endpointId} event ${v.eventId} (session ${v.sessionId}) ${v.status}: ${v.why}`
      : `[${v.invariant}] ${v.endpointId}${v.sessionId ? ` session ${v.sessionId}` : ''}: ${v.why}`;
    lines.push(head);
    if (v.eventId) {
      const entries = [...(e.history.get(v.eventId) ?? [])]
        .filter((h) => h.endpointId === v.endpointId)
        .sort((a, b) => a.recordedAt.localeCompare(b.recordedAt));
      const shown = entries.slice(-tail);
      if (entries.length > shown.length) lines.push(`    … ${entries.length - shown.length} earlier`);
      for (const h of shown) {
        const detail = [
          h.errorType,
          h.deadLetterReason,
          h.errorText?.slice(0, 120),
          h.deadLetterErrorDescription?.slice(0, 120),
        ]
          .filter(nonEmpty)
          .join(' | ');
        lines.push(`    ${h.recordedAt} ${h.messageType} ${h.messageId}${detail ? ` - ${detail}` : ''}`);
      }
      const logged = new Map<string, number>();
      for (const l of e.logs?.filter((l) => l.eventId === v.eventId) ?? []) {
        const line = `[${l.component}] ${l.msg}${l.err ? `: ${l.err.slice(0, 160)}` : ''}`;
        logged.set(line, (logged.get(line) ?? 0) + 1);
      }
      for (const [line, n] of logged) lines.push(`    log ×${n} ${line}`);
      for (const d of e.deadLetters.filter((d) => d.eventId === v.eventId))
        lines.push(
          `    dead letter in ${d.entity}: ${d.messageType ?? '?'} ${d.messageId} ${d.reason ?? ''} ${d.description?.slice(0, 120) ?? ''}`,
        );
    }
  }
  return lines.join('\n');
}

/** What one read of the evidence returns: the rows and the stored counters, with whatever else is read between. */
export interface EvidenceRead {
  rows: StatusRowSummary[];
  counters: Map<string, Record<string, number>>;
}

/**
 * Reads the evidence until two reads `pauseMs` apart agree on every row and every counter, at most `attempts`
 * times. Rows, history and counters are separate requests: on a system that is still moving, a row read before a
 * Resolver write and counters read after it disagree although the store is right (and the row looks stranded
 * although its answer is being applied). `moved` names what still changed between the last two reads (empty: the
 * returned read is one moment's).
 */
export async function readStableEvidence<T extends EvidenceRead>(
  read: () => Promise<T>,
  options: { attempts?: number; pauseMs?: number; sleep?: (ms: number) => Promise<void> } = {},
): Promise<{ evidence: T; moved: string[] }> {
  const attempts = options.attempts ?? 6;
  const pauseMs = options.pauseMs ?? 5_000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let previous = await read();
  let moved: string[] = [];
  for (let i = 1; i < attempts; i++) {
    await sleep(pauseMs);
    const next = await read();
    moved = differences(previous, next);
    previous = next;
    if (moved.length === 0) break;
  }
  return { evidence: previous, moved };
}

function differences(a: EvidenceRead, b: EvidenceRead): string[] {
  const out: string[] = [];
  const version = (r: StatusRowSummary) => `${r.status}/${r.subStatus ?? '-'} by ${r.messageType ?? '?'} ${r.lastMessageId} at ${r.updatedAt}`;
  const before = new Map(a.rows.map((r) => [`${r.endpointId}\u0000${r.id}`, r]));
  for (const r of b.rows) {
    const old = before.get(`${r.endpointId}\u0000${r.id}`);
    if (!old || version(old) !== version(r)) out.push(`${r.endpointId} event ${r.eventId}: ${old ? version(old) : 'no row'} -> ${version(r)}`);
  }
  for (const endpointId of new Set([...a.counters.keys(), ...b.counters.keys()])) {
    const x = JSON.stringify(Object.entries(a.counters.get(endpointId) ?? {}).sort());
    const y = JSON.stringify(Object.entries(b.counters.get(endpointId) ?? {}).sort());
    if (x !== y) out.push(`${endpointId} counters: ${x} -> ${y}`);
  }
  return out;
}
