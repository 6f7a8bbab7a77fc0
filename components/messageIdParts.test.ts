// The readable form of the platform's copy ids (components/messageIdParts.ts): the source id and the copies made,
// without losing anything of the exact id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { derivedMessageId } from '@nimbus/sdk/contract';
import { messageIdParts } from './messageIdParts.ts';

test('a parked then replayed copy: the source id and both copies, in order', () => {
  const id = derivedMessageId(derivedMessageId('InvoiceIssued-d93da724d8984079', 'parked'), 'replayed');
  assert.equal(id, 'InvoiceIssued-d93da724d8984079~parked~replayed');
  assert.deepEqual(messageIdParts(id), {
    base: 'InvoiceIssued-d93da724d8984079',
    copies: ['parked', 'replayed'],
    hashed: false,
  });
});

test('an id that is no copy is left whole, a ~ of its own included', () => {
  assert.deepEqual(messageIdParts('evt-1'), { base: 'evt-1', copies: [], hashed: false });
  assert.deepEqual(messageIdParts('a~b'), { base: 'a~b', copies: [], hashed: false });
  assert.deepEqual(messageIdParts('a~parked-ish'), { base: 'a~parked-ish', copies: [], hashed: false });
  assert.deepEqual(messageIdParts('~parked'), { base: '~parked', copies: [], hashed: false });
});

test('a copy of a long id: the base is a hash, and says so', () => {
  const id = derivedMessageId('x'.repeat(130), 'parked');
  const parts = messageIdParts(id);
  assert.deepEqual(parts.copies, ['parked']);
  assert.equal(parts.hashed, true);
  assert.equal(`${parts.base}~${parts.copies.join('~')}`, id);
});
