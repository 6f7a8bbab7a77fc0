// Audit entries for tests, in the shape the writers store them (server/audit/auditLog.ts): one set of defaults (an
// operator's succeeded resubmit on billingendpoint) that each test overrides only where its case differs.
import type { AuditRecord, AuditRecordInput } from '../audit/auditLog.ts';

/** An entry as handed to writeAudit. */
export const auditEntry = (over: Partial<AuditRecordInput> = {}): AuditRecordInput => ({
  actorKind: 'user',
  actorId: 'oid-1',
  actorName: 'ada@test',
  roles: 'Operator',
  action: 'resubmit',
  endpointId: 'billingendpoint',
  eventId: null,
  target: null,
  outcome: 'succeeded',
  status: 200,
  reason: null,
  details: null,
  ...over,
});

/** An entry as stored and read back (with its id, month and time), for the rules that run on read entries. */
export const auditRecord = (over: Partial<AuditRecord> = {}): AuditRecord => ({
  id: 'a1',
  month: '2026-12',
  at: '2026-12-06T06:00:00.000Z',
  ...auditEntry(),
  ...over,
});
