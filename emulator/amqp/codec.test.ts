import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  brokerLockTokenToManagement,
  lockTokenToTag,
  managementLockTokenToBroker,
  msToTicksBuffer,
  parseAddress,
  swapGuidGroups,
} from './codec.ts';

test('parseAddress names topics, subscriptions, dead-letter queues, $management and $cbs', () => {
  assert.deepEqual(parseAddress('orders'), { kind: 'topic', topic: 'orders' });
  assert.deepEqual(parseAddress('sb://127.0.0.1:5672/orders'), { kind: 'topic', topic: 'orders' });
  assert.deepEqual(parseAddress('orders/Subscriptions/s1'), {
    kind: 'subscription',
    source: { topic: 'orders', subscription: 's1' },
  });
  assert.deepEqual(parseAddress('orders/subscriptions/s1/$DeadLetterQueue'), {
    kind: 'subscription',
    source: { topic: 'orders', subscription: 's1', subQueue: 'deadLetter' },
  });
  assert.deepEqual(parseAddress('orders/Subscriptions/s1/$Transfer/$DeadLetterQueue'), {
    kind: 'subscription',
    source: { topic: 'orders', subscription: 's1', subQueue: 'transferDeadLetter' },
  });
  assert.deepEqual(parseAddress('orders/Subscriptions/s1/$management'), {
    kind: 'management',
    entity: { kind: 'subscription', source: { topic: 'orders', subscription: 's1' } },
  });
  assert.deepEqual(parseAddress('$cbs'), { kind: 'cbs' });
  assert.equal(parseAddress('orders/Rules/r1'), undefined);
  assert.equal(parseAddress('orders//x'), undefined);
  assert.equal(parseAddress(undefined), undefined);
});

test('lock tokens survive the trip through a $management body (.NET GUID byte order)', () => {
  const token = '00112233-4455-6677-8899-aabbccddeeff';
  const inBody = brokerLockTokenToManagement(token);
  assert.equal(inBody.toString('hex'), '33221100554477668899aabbccddeeff');
  assert.equal(managementLockTokenToBroker(inBody), token);
  assert.deepEqual(swapGuidGroups(swapGuidGroups(lockTokenToTag(token))), lockTokenToTag(token));
  assert.throws(() => managementLockTokenToBroker(42));
});

test('msToTicksBuffer encodes .NET ticks as a big-endian long', () => {
  assert.equal(msToTicksBuffer(0).readBigInt64BE(), 621355968000000000n);
  assert.equal(msToTicksBuffer(1).readBigInt64BE(), 621355968000010000n);
});
