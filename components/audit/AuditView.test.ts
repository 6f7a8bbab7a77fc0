// The Audit page's "Event / target" column: an Agent API receive names the event it handed out in its details
// (the request named none), and the column must show it rather than "—".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { auditSubject } from './AuditView.tsx';

test('the Event / target column shows the event(s) an agent.receive handed out', () => {
  assert.equal(auditSubject({ eventId: null, target: null, details: { handedOut: 'evt-1', messageId: 'm-1', waitSeconds: 20 } }), 'evt-1');
  assert.equal(auditSubject({ eventId: null, target: null, details: { handedOut: ['evt-1', 'evt-2'] } }), 'evt-1 · evt-2');
  // Nothing handed out (the long poll ended empty): nothing to name.
  assert.equal(auditSubject({ eventId: null, target: null, details: { handedOut: null, messageId: null } }), '—');
  assert.equal(auditSubject({ eventId: null, target: null, details: null }), '—');
  // The entry's own event and target, as before; the same id is not named twice.
  assert.equal(auditSubject({ eventId: 'evt-1', target: 'billingendpoint/sub', details: null }), 'evt-1 · billingendpoint/sub');
  assert.equal(auditSubject({ eventId: 'evt-1', target: null, details: { handedOut: 'evt-1' } }), 'evt-1');
  // Only strings: details are recorded data, not trusted to have this shape.
  assert.equal(auditSubject({ eventId: null, target: null, details: { handedOut: { id: 'x' } } }), '—');
});
