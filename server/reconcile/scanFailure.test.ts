// What a failed session scan tells the page (scanFailure in routes.ts): any reader may open Reconcile, so a broker
// error is named by its code, never by its message, which can carry the namespace's host and link names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServiceBusError } from '@azure/service-bus';
import { StoreTransientError } from '../../lib/store/index.ts';
import { scanFailure } from './routes.ts';

test('a broker error is shown by its code, without its message', () => {
  const err = new ServiceBusError('amqps://contoso-prod.servicebus.windows.net/billingendpoint/$management: link detached', 'ServiceCommunicationProblem');
  const text = scanFailure(err);
  assert.equal(text, 'the broker answered ServiceCommunicationProblem');
  assert.doesNotMatch(text, /contoso|servicebus\\.windows\\.net|link detached/);
});

test('a store error keeps its own message; anything else is named unexpected', () => {
  assert.match(scanFailure(new StoreTransientError('store timed out during a read')), /store timed out during a read/);
  const other = scanFailure(new Error('connect ECONNREFUSED 10.1.2.3:5671'));
  assert.equal(other, 'an unexpected error (logged on the console)');
});
