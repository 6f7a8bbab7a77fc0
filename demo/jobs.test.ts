// The demo's ledger jobs report a finished job until it is delivered: a broker outage while reporting must not leave
// the event a pending handoff forever (the chaos test's lost handoff reports). A fake client stands in for the bus:
// this is the job's retry logic, not the transport.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { HandoffClient, HandoffCoordinates } from '@nimbus/sdk';
import { settlementMessageId } from '@nimbus/sdk';
import { MessageType } from '@nimbus/sdk/contract';
import { LedgerJobs } from './jobs.ts';

const where: HandoffCoordinates = {
  endpointId: 'erpendpoint',
  eventId: 'e1',
  sessionId: 's1',
  messageId: 'm1',
};

function flakyClient(failures: number) {
  const calls: string[] = [];
  let reported: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (reported = resolve));
  const attempt = (kind: string) => {
    calls.push(kind);
    if (calls.length <= failures) return Promise.reject(new Error('broker unreachable'));
    reported();
    return Promise.resolve('id');
  };
  const client = {
    complete: () => attempt('complete'),
    fail: () => attempt('fail'),
  } as unknown as HandoffClient;
  return { client, calls, done };
}

test('a report that fails during an outage is retried until it is delivered', async () => {
  const { client, calls, done } = flakyClient(2);
  const jobs = new LedgerJobs(client, { minMs: 0, maxMs: 0, slowMs: 0 }, pino({ level: 'silent' }));
  jobs.start('job-1', where, 'completes', 0);
  await done;
  assert.deepEqual(calls, ['complete', 'complete', 'complete']);
  await jobs.stop();
});

test('stopping ends the retries', async () => {
  const { client, calls } = flakyClient(1_000);
  const jobs = new LedgerJobs(client, { minMs: 0, maxMs: 0, slowMs: 0 }, pino({ level: 'silent' }));
  jobs.start('job-2', where, 'fails', 0);
  while (calls.length < 2) await new Promise((r) => setTimeout(r, 50));
  const before = calls.length;
  // stop() waits for the report in flight, so it returns only once the retry loop has ended (a loop that ignored
  // the stop would keep it waiting through its next pause, a second or more, and attempt again).
  await jobs.stop();
  assert.ok(calls.length <= before + 1, 'at most the attempt already under way');
});

test('a settlement has one MessageId per command and handoff, so a retried send is the same message', () => {
  const a = settlementMessageId(MessageType.HandoffCompletedRequest, where);
  assert.equal(a, settlementMessageId(MessageType.HandoffCompletedRequest, { ...where }));
  assert.notEqual(a, settlementMessageId(MessageType.HandoffFailedRequest, where));
  assert.notEqual(a, settlementMessageId(MessageType.HandoffCompletedRequest, { ...where, messageId: 'm2' }));
  assert.ok(a.length <= 128);
});
