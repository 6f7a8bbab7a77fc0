// SAS verification with the real @azure/service-bus clients: the namespace key of the printed connection string
// works; a wrong key, an expired token, a policy without the right or scoped to another entity are refused with
// the errors Azure gives (UnauthorizedAccess on AMQP, 401 on the admin plane). Entity policies are a topic's
// or a queue's AuthorizationRules.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ServiceBusClient, type ServiceBusAdministrationClient } from '@azure/service-bus';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { startEmulator, type RunningEmulator } from '../index.ts';
import { errorCode } from '../amqp/test-support.ts';
import { createSasToken } from './sas-token.ts';
import { generateKey } from './policies.ts';

const SEND_KEY = generateKey();
const LISTEN_KEY = generateKey();
const NS_LISTEN_KEY = generateKey();

describe('SAS on the emulator', () => {
  let emulator: RunningEmulator;
  let admin: ServiceBusAdministrationClient;
  const clients: Array<{ close(): Promise<void> }> = [];
  /** The admin client as our code builds it (plain HTTP to the emulator). */
  const adminFor = (connectionString: string): ServiceBusAdministrationClient => {
    const c = createServiceBusClients(connectionString, { admin: { retryOptions: { maxRetries: 0 } } });
    clients.push(c);
    return c.admin;
  };

  const endpoint = (): string => `Endpoint=sb://127.0.0.1:${emulator.port};UseDevelopmentEmulator=true`;
  const withKey = (keyName: string, key: string): ServiceBusClient => {
    const c = new ServiceBusClient(`${endpoint()};SharedAccessKeyName=${keyName};SharedAccessKey=${key}`, {
      retryOptions: { maxRetries: 0, timeoutInMs: 5_000 },
    });
    clients.push(c);
    return c;
  };

  before(async () => {
    emulator = await startEmulator({ port: 0, logLevel: 'silent' });
    admin = adminFor(emulator.connectionString);
    await admin.createTopic('orders', {
      authorizationRules: [
        {
          claimType: 'SharedAccessKey',
          keyName: 'orders-send',
          accessRights: ['Send'],
          primaryKey: SEND_KEY,
          secondaryKey: generateKey(),
        },
        {
          claimType: 'SharedAccessKey',
          keyName: 'orders-listen',
          accessRights: ['Listen'],
          primaryKey: LISTEN_KEY,
          secondaryKey: generateKey(),
        },
      ],
    });
    await admin.createSubscription('orders', 'all');
    await admin.createTopic('billing');
    await admin.createSubscription('billing', 'all');
    // A namespace policy through the admin plane's JSON resource, signed with the namespace key.
    const url = `http://127.0.0.1:${emulator.port}/$Resources/AuthorizationRules/ns-listen`;
    const res = await fetch(url, {
      method: 'PUT',
      headers: {
        authorization: signedFor(url, 'RootManageSharedAccessKey', emulator.key),
        'content-type': 'application/json',
      },
      body: JSON.stringify({ rights: ['Listen'], primaryKey: NS_LISTEN_KEY }),
    });
    assert.equal(res.status, 201, await res.text());
  });
  after(async () => {
    for (const c of clients) await c.close();
    await emulator.close();
  });

  test('the printed connection string sends and receives', async () => {
    const client = withKey('RootManageSharedAccessKey', emulator.key);
    const sender = client.createSender('orders');
    await sender.sendMessages({ body: 'root', messageId: 'root-1' });
    const receiver = client.createReceiver('orders', 'all', { receiveMode: 'receiveAndDelete' });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    assert.equal(m?.body, 'root');
  });

  test('a wrong namespace key is refused', async () => {
    const client = withKey('RootManageSharedAccessKey', generateKey());
    assert.equal(
      await errorCode(client.createSender('orders').sendMessages({ body: 'x' })),
      'UnauthorizedAccess',
    );
    const receiver = client.createReceiver('orders', 'all');
    assert.equal(
      await errorCode(receiver.receiveMessages(1, { maxWaitTimeInMs: 1_000 })),
      'UnauthorizedAccess',
    );
  });

  test('an expired token is refused, a valid one for the same policy is not', async () => {
    const resource = `sb://127.0.0.1:${emulator.port}/orders`;
    const past = createSasToken(resource, 'orders-send', SEND_KEY, Math.floor(Date.now() / 1000) - 60);
    const expired = new ServiceBusClient(`${endpoint()};SharedAccessSignature=${past}`, {
      retryOptions: { maxRetries: 0, timeoutInMs: 5_000 },
    });
    clients.push(expired);
    assert.equal(
      await errorCode(expired.createSender('orders').sendMessages({ body: 'x' })),
      'UnauthorizedAccess',
    );
    const future = createSasToken(resource, 'orders-send', SEND_KEY, Math.floor(Date.now() / 1000) + 600);
    const valid = new ServiceBusClient(`${endpoint()};SharedAccessSignature=${future}`, {
      retryOptions: { maxRetries: 0, timeoutInMs: 5_000 },
    });
    clients.push(valid);
    await valid.createSender('orders').sendMessages({ body: 'signed' });
  });

  test('a Send-only policy sends but cannot receive', async () => {
    const client = withKey('orders-send', SEND_KEY);
    await client.createSender('orders').sendMessages({ body: 'from-sender' });
    const receiver = client.createReceiver('orders', 'all');
    assert.equal(
      await errorCode(receiver.receiveMessages(1, { maxWaitTimeInMs: 1_000 })),
      'UnauthorizedAccess',
    );
    assert.equal(await errorCode(receiver.peekMessages(1)), 'UnauthorizedAccess');
  });

  test('a Listen-only policy receives but cannot send or schedule', async () => {
    const client = withKey('orders-listen', LISTEN_KEY);
    assert.equal(
      await errorCode(client.createSender('orders').sendMessages({ body: 'x' })),
      'UnauthorizedAccess',
    );
    assert.equal(
      await errorCode(
        client.createSender('orders').scheduleMessages({ body: 'x' }, new Date(Date.now() + 60_000)),
      ),
      'UnauthorizedAccess',
    );
    const receiver = client.createReceiver('orders', 'all', { receiveMode: 'receiveAndDelete' });
    const got = await receiver.receiveMessages(10, { maxWaitTimeInMs: 2_000 });
    assert.ok(got.length > 0, 'the Listen key reads what the Send key sent');
  });

  test('an entity policy cannot touch another entity', async () => {
    const sendKey = withKey('orders-send', SEND_KEY);
    assert.equal(
      await errorCode(sendKey.createSender('billing').sendMessages({ body: 'x' })),
      'UnauthorizedAccess',
    );
    const listenKey = withKey('orders-listen', LISTEN_KEY);
    const receiver = listenKey.createReceiver('billing', 'all');
    assert.equal(
      await errorCode(receiver.receiveMessages(1, { maxWaitTimeInMs: 1_000 })),
      'UnauthorizedAccess',
    );
  });

  test('a namespace Listen policy receives from every subscription but sends nowhere', async () => {
    const root = withKey('RootManageSharedAccessKey', emulator.key);
    await root.createSender('billing').sendMessages({ body: 'invoice' });
    const client = withKey('ns-listen', NS_LISTEN_KEY);
    const receiver = client.createReceiver('billing', 'all', { receiveMode: 'receiveAndDelete' });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    assert.equal(m?.body, 'invoice');
    assert.equal(
      await errorCode(client.createSender('billing').sendMessages({ body: 'x' })),
      'UnauthorizedAccess',
    );
  });

  test('the admin plane answers 401 without a valid Manage token', async () => {
    const wrong = adminFor(
      `${endpoint()};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${generateKey()}`,
    );
    await assert.rejects(wrong.getTopic('orders'), (err: { statusCode?: number }) => err.statusCode === 401);
    // An entity Send key is not Manage, even on its own topic.
    const sender = adminFor(`${endpoint()};SharedAccessKeyName=orders-send;SharedAccessKey=${SEND_KEY}`);
    await assert.rejects(sender.getTopic('orders'), (err: { statusCode?: number }) => err.statusCode === 401);
    const bare = await fetch(`http://127.0.0.1:${emulator.port}/$Resources/Topics`);
    assert.equal(bare.status, 401);
    assert.match(await bare.text(), /MissingToken/);
    // The policies show in the topic's description, as Azure lists them to a Manage caller.
    const orders = await admin.getTopic('orders');
    assert.deepEqual(
      orders.authorizationRules?.map((r) => [r.keyName, r.accessRights]),
      [
        ['orders-send', ['Send']],
        ['orders-listen', ['Listen']],
      ],
    );
  });

  test('a policy added by updateTopic works at once; an update without rules keeps them; an empty list revokes', async () => {
    const key = generateKey();
    const billing = await admin.getTopic('billing');
    await admin.updateTopic({
      ...billing,
      authorizationRules: [
        { claimType: 'SharedAccessKey', keyName: 'billing-send', accessRights: ['Send'], primaryKey: key },
      ],
    });
    const client = withKey('billing-send', key);
    await client.createSender('billing').sendMessages({ body: 'added' });
    const again = await admin.getTopic('billing');
    assert.equal(again.authorizationRules?.[0]?.keyName, 'billing-send');
    assert.ok(again.authorizationRules?.[0]?.secondaryKey, 'a missing secondary key is generated');
    await admin.updateTopic({ ...again, authorizationRules: undefined, userMetadata: 'settings only' });
    await withKey('billing-send', key).createSender('billing').sendMessages({ body: 'kept' });
    await admin.updateTopic({ ...again, authorizationRules: [] });
    assert.equal(
      await errorCode(withKey('billing-send', key).createSender('billing').sendMessages({ body: 'x' })),
      'UnauthorizedAccess',
    );
  });

  test('queue policies: a queue Send key sends to its queue only, a Listen key receives (and its DLQ) only', async () => {
    const qSend = generateKey();
    const qListen = generateKey();
    await admin.createQueue('invoices', {
      authorizationRules: [
        { claimType: 'SharedAccessKey', keyName: 'invoices-send', accessRights: ['Send'], primaryKey: qSend },
        {
          claimType: 'SharedAccessKey',
          keyName: 'invoices-listen',
          accessRights: ['Listen'],
          primaryKey: qListen,
        },
      ],
    });
    await admin.createQueue('receipts');
    const sendKey = withKey('invoices-send', qSend);
    await sendKey.createSender('invoices').sendMessages([
      { body: 'i-1', messageId: 'i-1' },
      { body: 'i-2', messageId: 'i-2' },
    ]);
    assert.equal(
      await errorCode(sendKey.createReceiver('invoices').receiveMessages(1, { maxWaitTimeInMs: 1_000 })),
      'UnauthorizedAccess',
    );
    assert.equal(await errorCode(sendKey.createReceiver('invoices').peekMessages(1)), 'UnauthorizedAccess');
    // Scheduling is a Send operation on the queue's $management node.
    const [seq] = await sendKey
      .createSender('invoices')
      .scheduleMessages({ body: 'later' }, new Date(Date.now() + 600_000));
    await sendKey.createSender('invoices').cancelScheduledMessages(seq!);
    for (const other of ['receipts', 'orders']) {
      assert.equal(
        await errorCode(sendKey.createSender(other).sendMessages({ body: 'x' })),
        'UnauthorizedAccess',
        `a queue key must not send to ${other}`,
      );
    }
    const listenKey = withKey('invoices-listen', qListen);
    assert.equal(
      await errorCode(listenKey.createSender('invoices').sendMessages({ body: 'x' })),
      'UnauthorizedAccess',
    );
    const receiver = listenKey.createReceiver('invoices');
    const got = await receiver.receiveMessages(2, { maxWaitTimeInMs: 5_000 });
    assert.deepEqual(
      got.map((m) => m.messageId),
      ['i-1', 'i-2'],
    );
    await receiver.completeMessage(got[0]!);
    await receiver.renewMessageLock(got[1]!);
    await receiver.deadLetterMessage(got[1]!, {
      deadLetterReason: 'test',
      deadLetterErrorDescription: 'by test',
    });
    const dlq = listenKey.createReceiver('invoices', {
      subQueueType: 'deadLetter',
      receiveMode: 'receiveAndDelete',
    });
    const [dead] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    assert.equal(dead?.messageId, 'i-2');
    assert.equal(
      await errorCode(listenKey.createReceiver('receipts').receiveMessages(1, { maxWaitTimeInMs: 1_000 })),
      'UnauthorizedAccess',
    );
    // The admin plane shows them on the queue; an update without rules keeps them, an empty list revokes.
    const q = await admin.getQueue('invoices');
    assert.deepEqual(
      q.authorizationRules?.map((r) => [r.keyName, r.accessRights]),
      [
        ['invoices-send', ['Send']],
        ['invoices-listen', ['Listen']],
      ],
    );
    const listed: string[] = [];
    for await (const each of admin.listQueues())
      if (each.name === 'invoices') listed.push(...(each.authorizationRules ?? []).map((r) => r.keyName));
    assert.deepEqual(listed, ['invoices-send', 'invoices-listen']);
    await admin.updateQueue({ ...q, authorizationRules: undefined, maxDeliveryCount: 4 });
    await withKey('invoices-send', qSend).createSender('invoices').sendMessages({ body: 'kept' });
    await admin.updateQueue({ ...q, authorizationRules: [] });
    assert.equal(
      await errorCode(withKey('invoices-send', qSend).createSender('invoices').sendMessages({ body: 'x' })),
      'UnauthorizedAccess',
    );
    // A queue key never opens the admin plane, and a deleted queue's policies do not come back with a namesake.
    const queueAdmin = adminFor(
      `${endpoint()};SharedAccessKeyName=invoices-listen;SharedAccessKey=${qListen}`,
    );
    await assert.rejects(
      queueAdmin.getQueue('invoices'),
      (err: { statusCode?: number }) => err.statusCode === 401,
    );
    await admin.updateQueue({
      ...(await admin.getQueue('invoices')),
      authorizationRules: [
        { claimType: 'SharedAccessKey', keyName: 'invoices-send', accessRights: ['Send'], primaryKey: qSend },
      ],
    });
    await withKey('invoices-send', qSend).createSender('invoices').sendMessages({ body: 'back' });
    await admin.deleteQueue('invoices');
    await admin.createQueue('invoices');
    assert.equal(
      await errorCode(withKey('invoices-send', qSend).createSender('invoices').sendMessages({ body: 'x' })),
      'UnauthorizedAccess',
    );
  });

  test('--allow-anonymous accepts any key (old tests only)', async () => {
    const open = await startEmulator({ port: 0, allowAnonymous: true });
    try {
      const client = new ServiceBusClient(
        `Endpoint=sb://127.0.0.1:${open.port};SharedAccessKeyName=x;SharedAccessKey=local;UseDevelopmentEmulator=true`,
        { retryOptions: { maxRetries: 0, timeoutInMs: 5_000 } },
      );
      open.broker.createTopic({ name: 't' });
      await client.createSender('t').sendMessages({ body: 1 });
      await client.close();
    } finally {
      await open.close();
    }
  });
});

function signedFor(url: string, keyName: string, key: string): string {
  return createSasToken(url.toLowerCase(), keyName, key, Math.floor(Date.now() / 1000) + 300);
}
