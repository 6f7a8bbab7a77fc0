// The exact shapes of $cbs and $management replies, read from the wire with bare rhea (no Service Bus SDK):
// SASL mechanisms offered, the status keys each node uses and their AMQP type (int), the correlation-id in
// the AMQP type of the request's message-id (ulong, uuid, string, binary), and where the reply goes (the
// reply-to link, or the link attached to the node when the request names none, as uAMQP sends them).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { Constants } from '@azure/core-amqp';
import rhea from 'rhea';
import type { Connection, Message } from 'rhea';
import { createSasToken } from '../auth/sas-token.ts';
import { ROOT_KEY_NAME } from '../auth/policies.ts';
import { startEmulator } from '../index.ts';
import { PEEK_PAGE_MAX } from './management.ts';
import type { RunningEmulator } from '../index.ts';

const RAW = Symbol.for('nimbus.emulator.rawMessage');

interface TypedLike {
  type?: { typecode?: number };
  value: unknown;
  descriptor?: { value: unknown };
}

/** Type codes of the reply's correlation-id and of its application properties, read from its bytes. */
function wireTypes(m: Message): { correlation?: number; props: Map<string, number> } {
  const raw = (m as unknown as Record<symbol, Buffer | undefined>)[RAW];
  assert.ok(raw, 'the raw reply bytes are kept (typed-values.ts keepRawMessages)');
  const reader = new (
    rhea.types as unknown as { Reader: new (b: Buffer) => { remaining(): number; read(): TypedLike } }
  ).Reader(raw);
  const out: { correlation?: number; props: Map<string, number> } = { props: new Map() };
  while (reader.remaining()) {
    const s = reader.read();
    const code = Number(s.descriptor?.value);
    const inner = s.value as TypedLike | TypedLike[] | null;
    const items = Array.isArray(inner)
      ? inner
      : inner && Array.isArray(inner.value)
        ? (inner.value as TypedLike[])
        : [];
    if (code === 0x73) out.correlation = items[5]?.type?.typecode;
    if (code === 0x74) {
      for (let i = 0; i + 1 < items.length; i += 2)
        out.props.set(String(items[i]!.value), items[i + 1]!.type!.typecode!);
    }
  }
  return out;
}

const INT_CODES = [0x71, 0x54];

describe('$cbs and $management replies on the wire (bare rhea)', () => {
  let emulator: RunningEmulator;
  let connection: Connection;

  before(async () => {
    emulator = await startEmulator({ port: 0 });
    emulator.broker.createTopic({ name: 'shapes' });
    emulator.broker.createSubscription({ topicName: 'shapes', subscriptionName: 's' });
    const container = rhea.create_container();
    connection = container.connect({ host: '127.0.0.1', port: emulator.port, reconnect: false });
    await new Promise<void>((resolve, reject) => {
      connection.once('connection_open', () => resolve());
      connection.once('connection_error', () => reject(new Error('connection failed')));
    });
  });

  after(async () => {
    connection?.close();
    await emulator?.close();
  });

  it('offers SASL MSSBCBS besides ANONYMOUS and PLAIN (and EXTERNAL)', async () => {
    const socket = net.connect(emulator.port, '127.0.0.1');
    const bytes = await new Promise<Buffer>((resolve) => {
      let got = Buffer.alloc(0);
      socket.on('data', (d: Buffer) => {
        got = Buffer.concat([got, d]);
        if (got.includes('MSSBCBS') || got.length > 200) resolve(got);
      });
      socket.write(Buffer.from([0x41, 0x4d, 0x51, 0x50, 3, 1, 0, 0]));
      setTimeout(() => resolve(got), 5_000).unref();
    });
    socket.destroy();
    for (const mech of ['MSSBCBS', 'ANONYMOUS', 'PLAIN', 'EXTERNAL']) {
      assert.ok(bytes.includes(mech), `sasl-mechanisms offers ${mech}`);
    }
  });

  /** Sends one request on `node` and resolves with the reply read on `replyLink` (or the node's own link). */
  async function request(
    node: string,
    message: Message,
    replyTo: string | undefined,
    replyLink: { max_message_size?: number } = {},
  ): Promise<Message> {
    const receiver = connection.open_receiver({
      source: { address: node },
      target: { address: replyTo ?? node },
      ...replyLink,
    });
    const sender = connection.open_sender({ target: { address: node } });
    try {
      return await new Promise<Message>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no reply from ${node}`)), 10_000);
        receiver.on('message', (ctx) => {
          clearTimeout(timer);
          resolve(ctx.message as Message);
        });
        receiver.once('receiver_open', () => {
          const send = (): void => {
            sender.send(replyTo ? { ...message, reply_to: replyTo } : message);
          };
          if (sender.sendable()) send();
          else sender.once('sendable', send);
        });
      });
    } finally {
      receiver.close();
      sender.close();
    }
  }

  /** Puts a token for `entityPath` on the connection's $cbs node, as the clients do before its links. */
  async function authorize(entityPath: string): Promise<void> {
    const resource = `sb://127.0.0.1:${emulator.port}/${entityPath}`;
    const token = createSasToken(resource, ROOT_KEY_NAME, emulator.key, Math.floor(Date.now() / 1000) + 3600);
    const reply = await request(
      '$cbs',
      {
        message_id: `token-${entityPath}`,
        application_properties: { operation: 'put-token', type: 'jwt', name: resource },
        body: token,
      } as Message,
      undefined,
    );
    assert.equal(reply.application_properties?.['status-code'], 202, `put-token for ${entityPath}`);
  }

  /** One `operation` on `entityPath`'s $management node, answered on the reply-to link `replyTo`. */
  function manage(
    entityPath: string,
    operation: string,
    body: Record<string, unknown>,
    replyTo: string | undefined,
    replyLink: { max_message_size?: number } = {},
  ): Promise<Message> {
    return request(
      `${entityPath}/$management`,
      {
        message_id: `${operation}-${replyTo ?? 'node'}`,
        application_properties: { operation },
        body: rhea.types.wrap_map(body),
      } as unknown as Message,
      replyTo,
      replyLink,
    );
  }

  function putToken(messageId: unknown, tokenType: string): Message {
    const resource = `sb://127.0.0.1:${emulator.port}/shapes`;
    const token = createSasToken(resource, ROOT_KEY_NAME, emulator.key, Math.floor(Date.now() / 1000) + 3600);
    return {
      message_id: messageId,
      application_properties: { operation: 'put-token', type: tokenType, name: resource },
      body: token,
    } as Message;
  }

  const ids: Array<[string, unknown, number[]]> = [
    ['ulong', rhea.types.wrap_ulong(7), [0x80, 0x53, 0x44]],
    ['uuid', rhea.types.wrap_uuid(Buffer.alloc(16, 0xab)), [0x98]],
    ['string', 'req-1', [0xa1, 0xb1]],
    ['binary', rhea.types.wrap_binary(Buffer.from([1, 2, 3])), [0xa0, 0xb0]],
  ];
  for (const [kind, id, codes] of ids) {
    it(`$cbs put-token with a ${kind} message-id and no reply-to: 202 with status-code (int) on the node's link, correlation-id a ${kind}`, async () => {
      const reply = await request('$cbs', putToken(id, 'servicebus.windows.net:sastoken'), undefined);
      assert.equal(reply.application_properties?.['status-code'], 202);
      assert.equal(reply.application_properties?.['status-description'], 'Accepted');
      assert.equal(reply.application_properties?.statusCode, undefined, '$cbs uses the hyphenated keys only');
      const types = wireTypes(reply);
      assert.ok(
        INT_CODES.includes(types.props.get('status-code') ?? -1),
        `status-code is an AMQP int: ${JSON.stringify([...types.props])}`,
      );
      assert.ok(
        codes.includes(types.correlation ?? -1),
        `correlation-id typecode 0x${types.correlation?.toString(16)}`,
      );
    });
  }

  it('$cbs put-token of type jwt with a SAS token and reply-to: answered on the reply-to link', async () => {
    const reply = await request('$cbs', putToken('jwt-1', 'jwt'), 'my-replies');
    assert.equal(reply.application_properties?.['status-code'], 202);
    assert.equal(reply.correlation_id, 'jwt-1');
    assert.equal(reply.to, 'my-replies');
  });

  it('$cbs put-token with a bad signature: 401 with a status-description', async () => {
    const m = putToken('bad', 'servicebus.windows.net:sastoken');
    m.body = String(m.body).replace(/sig=[^&]+/, 'sig=AAAA');
    const reply = await request('$cbs', m, undefined);
    assert.equal(reply.application_properties?.['status-code'], 401);
    assert.match(String(reply.application_properties?.['status-description']), /signature/i);
  });

  it('$management peek: statusCode (int) and statusDescription, correlation-id typed as the message-id', async () => {
    await request('$cbs', putToken('t', 'servicebus.windows.net:sastoken'), undefined);
    const node = 'shapes/Subscriptions/s/$management';
    const resource = `sb://127.0.0.1:${emulator.port}/${node.replace('/$management', '')}`;
    const token = createSasToken(resource, ROOT_KEY_NAME, emulator.key, Math.floor(Date.now() / 1000) + 3600);
    await request(
      '$cbs',
      {
        message_id: 'sub',
        application_properties: { operation: 'put-token', type: 'jwt', name: resource },
        body: token,
      } as Message,
      undefined,
    );
    const reply = await request(
      node,
      {
        message_id: rhea.types.wrap_binary(Buffer.from([9, 9])),
        application_properties: { operation: 'com.microsoft:peek-message' },
        body: rhea.types.wrap_map({
          'from-sequence-number': rhea.types.wrap_long(1),
          'message-count': rhea.types.wrap_int(1),
        }),
      } as unknown as Message,
      undefined,
    );
    const props = reply.application_properties ?? {};
    assert.equal(props.statusCode, 204, 'no messages: 204');
    assert.equal(typeof props.statusDescription, 'string');
    assert.equal(props['status-code'], undefined, '$management uses the camel-case keys');
    const types = wireTypes(reply);
    assert.ok(INT_CODES.includes(types.props.get('statusCode') ?? -1), 'statusCode is an AMQP int');
    assert.ok([0xa0, 0xb0].includes(types.correlation ?? -1), 'correlation-id is binary');
  });

  it('$management error: errorCondition as an AMQP symbol (the key and type .NET and Python read)', async () => {
    // On a missing subscription's node: the reply is 404 amqp:not-found. `error-condition` (what the emulator
    // sent before) is read by core-amqp only; the .NET client casts `errorCondition` to AmqpSymbol and
    // azure-servicebus for Python looks up b"errorCondition", so without it they map by status alone.
    const entity = 'shapes/Subscriptions/missing';
    await authorize(entity);
    const reply = await manage(
      entity,
      'com.microsoft:get-session-state',
      { 'session-id': 'nobody' },
      undefined,
    );
    const props = reply.application_properties ?? {};
    assert.equal(props.statusCode, 404);
    assert.equal(props.errorCondition, 'amqp:not-found');
    assert.ok(
      [0xa3, 0xb3].includes(wireTypes(reply).props.get('errorCondition') ?? -1),
      'errorCondition is a symbol',
    );
  });

  it('$management batch-delete-messages deletes up to message-count messages enqueued before the cutoff', async () => {
    emulator.broker.createSubscription({ topicName: 'shapes', subscriptionName: 'purge' });
    emulator.broker.send(
      'shapes',
      [1, 2, 3].map((i) => ({ message_id: `m${i}`, body: i }) as Message),
    );
    const entity = 'shapes/Subscriptions/purge';
    await authorize(entity);
    const reply = await manage(
      entity,
      'com.microsoft:batch-delete-messages',
      {
        'message-count': rhea.types.wrap_int(2),
        'enqueued-time-utc': rhea.types.wrap_timestamp(Date.now() + 1_000),
      },
      'purge-replies',
    );
    assert.equal(reply.application_properties?.statusCode, 200);
    assert.equal((reply.body as Record<string, unknown>)['message-count'], 2);
    const left = emulator.broker.getSubscriptionRuntime('shapes', 'purge');
    assert.equal(left.activeMessageCount, 1, 'one of three left');
  });

  it('$management peek-message: a message-count above the page answers a capped page; negative or fractional is 400', async () => {
    // Before, a count above 10,000 was refused as a bad request; Azure answers what it can and the clients
    // accept a short page.
    emulator.broker.createTopic({ name: 'peekcap' });
    emulator.broker.createSubscription({ topicName: 'peekcap', subscriptionName: 's' });
    const total = PEEK_PAGE_MAX + 1;
    emulator.broker.send(
      'peekcap',
      Array.from({ length: total }, (_, i) => ({ message_id: `c${i}`, body: i }) as Message),
    );
    const entity = 'peekcap/Subscriptions/s';
    await authorize(entity);
    const peek = (id: string, count: unknown): Promise<Message> =>
      manage(
        entity,
        'com.microsoft:peek-message',
        { 'from-sequence-number': rhea.types.wrap_long(1), 'message-count': count },
        `peekcap-${id}`,
      );
    const big = await peek('big', rhea.types.wrap_int(2_147_483_647));
    assert.equal(big.application_properties?.statusCode, 200);
    const messages = (big.body as { messages?: unknown[] }).messages ?? [];
    assert.equal(messages.length, PEEK_PAGE_MAX, `a page of ${PEEK_PAGE_MAX} from ${total} messages`);
    for (const [id, count] of [
      ['neg', rhea.types.wrap_int(-1)],
      ['zero', rhea.types.wrap_int(0)],
      ['frac', rhea.types.wrap_double(2.5)],
    ] as const) {
      const reply = await peek(id, count);
      assert.equal(reply.application_properties?.statusCode, 400, `message-count ${id}: bad request`);
    }
  });

  it("$management peek: the page is cut to what the reply link's max-message-size takes; a message that fits alone in none is 413", async () => {
    // A client's reply link may declare a max-message-size at attach (0 or absent: no limit). The emulator
    // answered every page whole before (up to 10,000 messages), however large: a reply the link could not
    // take. Azure answers a peek with fewer messages than asked for; the clients ask again from the last one.
    const entity = 'peeksize/Subscriptions/s';
    emulator.broker.createTopic({ name: 'peeksize' });
    emulator.broker.createSubscription({ topicName: 'peeksize', subscriptionName: 's' });
    const total = 200;
    const body = 'x'.repeat(10 * 1024);
    emulator.broker.send(
      'peeksize',
      Array.from({ length: total }, (_, i) => ({ message_id: `p${i}`, body }) as Message),
    );
    await authorize(entity);
    const peek = (from: number, replyTo: string, maxMessageSize: number): Promise<Message> =>
      manage(
        entity,
        'com.microsoft:peek-message',
        { 'from-sequence-number': rhea.types.wrap_long(from), 'message-count': rhea.types.wrap_int(total) },
        replyTo,
        { max_message_size: maxMessageSize },
      );
    const entries = (reply: Message): Buffer[] =>
      ((reply.body as { messages?: Array<{ message: Buffer }> }).messages ?? []).map((e) => e.message);
    const sequenceOf = (encoded: Buffer): number =>
      Number(rhea.message.decode(encoded).message_annotations?.['x-opt-sequence-number']);
    const limit = 64 * 1024;
    const pages: Buffer[][] = [];
    let from = 1;
    const replySizes: number[] = [];
    while (pages.flat().length < total && pages.length < total) {
      const reply = await peek(from, `size-${pages.length}`, limit);
      assert.equal(reply.application_properties?.statusCode, 200, `page ${pages.length}`);
      const raw = (reply as unknown as Record<symbol, Buffer>)[RAW]!;
      assert.ok(raw.length <= limit, `page ${pages.length}: ${raw.length} bytes on a ${limit}-byte link`);
      const page = entries(reply);
      assert.ok(page.length >= 1, 'every page has a message');
      replySizes.push(raw.length);
      pages.push(page);
      from = sequenceOf(page.at(-1)!) + 1;
    }
    assert.equal(pages.flat().length, total, 'paging from the last sequence number peeks every message once');
    assert.deepEqual(
      pages.flat().map((m) => rhea.message.decode(m).message_id),
      Array.from({ length: total }, (_, i) => `p${i}`),
    );
    // Cut at what fits, not shorter: the next page's first message would not have fitted in the room left
    // (give or take the few bytes of the emulator's upper bounds on the AMQP headers).
    for (let i = 0; i + 1 < pages.length; i++) {
      const room = limit - replySizes[i]!;
      assert.ok(room < pages[i + 1]![0]!.length + 32, `page ${i} left ${room} bytes unused`);
    }
    // No limit (0): the whole page in one reply, as before.
    const whole = await peek(1, 'size-unlimited', 0);
    assert.equal(entries(whole).length, total);
    // A link that cannot take even one message: an error reply that fits, not an undeliverable one.
    const tooSmall = await peek(1, 'size-too-small', 4 * 1024);
    assert.equal(tooSmall.application_properties?.statusCode, 413);
    assert.equal(tooSmall.application_properties?.errorCondition, 'amqp:link:message-size-exceeded');
  });

  it("$management: any reply larger than its link's max-message-size becomes a 413 reply that fits, or a detach", async () => {
    // Before, a reply went out whatever its size (here an enumerate-rules page of ~10 KB on a 4 KB link).
    const entity = 'bigrules/Subscriptions/s';
    emulator.broker.createTopic({ name: 'bigrules' });
    emulator.broker.createSubscription({ topicName: 'bigrules', subscriptionName: 's' });
    for (let i = 0; i < 10; i++) {
      const sqlExpression = `user.k${i} = '${'v'.repeat(1000)}'`;
      emulator.broker.createRule('bigrules', 's', { name: `r${i}`, filter: { kind: 'sql', sqlExpression } });
    }
    await authorize(entity);
    const enumerate = { top: rhea.types.wrap_int(100), skip: rhea.types.wrap_int(0) };
    const limit = 4 * 1024;
    const reply = await manage(entity, 'com.microsoft:enumerate-rules', enumerate, 'rules-small', {
      max_message_size: limit,
    });
    const raw = (reply as unknown as Record<symbol, Buffer>)[RAW]!;
    assert.ok(raw.length <= limit, `${raw.length} bytes on a ${limit}-byte link`);
    assert.equal(reply.application_properties?.statusCode, 413);
    assert.equal(reply.application_properties?.errorCondition, 'amqp:link:message-size-exceeded');
    const whole = await manage(entity, 'com.microsoft:enumerate-rules', enumerate, 'rules-whole');
    assert.equal(whole.application_properties?.statusCode, 200, 'without a limit the page is answered');
    // A link too small for the error reply as well is detached with the condition, not left waiting.
    const tiny = connection.open_receiver({
      source: { address: `${entity}/$management` },
      target: { address: 'rules-tiny' },
      max_message_size: 64,
    });
    const sender = connection.open_sender({ target: { address: `${entity}/$management` } });
    try {
      const detached = new Promise<string | undefined>((resolve) => {
        tiny.once('receiver_close', (ctx) => resolve(ctx.receiver?.error?.condition));
        tiny.once('message', () => resolve('a reply came'));
      });
      tiny.once('receiver_open', () => {
        const send = (): void => {
          sender.send({
            message_id: 'tiny',
            reply_to: 'rules-tiny',
            application_properties: { operation: 'com.microsoft:enumerate-rules' },
            body: rhea.types.wrap_map(enumerate),
          } as unknown as Message);
        };
        if (sender.sendable()) send();
        else sender.once('sendable', send);
      });
      assert.equal(await detached, 'amqp:link:message-size-exceeded');
    } finally {
      sender.close();
      tiny.close();
    }
  });

  it('every $management operation the clients name is implemented (none answers 501); an unknown one is 501', async () => {
    // Read from the installed clients, so a client upgrade that adds an operation fails here: the JS client's
    // table (core-amqp Constants.operations, less put-token, a $cbs operation, and READ, Event Hubs'), and
    // azure-servicebus for Python's constants when Debian's package is installed.
    const names = new Set<string>(
      Object.values(Constants.operations).filter((op) => op.startsWith('com.microsoft:')),
    );
    try {
      const py = readFileSync('/usr/lib/python3/dist-packages/azure/servicebus/_common/constants.py', 'utf8');
      for (const m of py.matchAll(/^(REQUEST_RESPONSE_\w+) = \(?\s*VENDOR \+ b":([a-z-]+)"/gm)) {
        if (m[1] !== 'REQUEST_RESPONSE_TIMEOUT') names.add(`com.microsoft:${m[2]}`);
      }
    } catch {
      // not installed: the JS client's list alone
    }
    assert.ok(names.size >= 14, `found ${names.size} operations`);
    const resource = `sb://127.0.0.1:${emulator.port}/shapes/Subscriptions/s`;
    const token = createSasToken(resource, ROOT_KEY_NAME, emulator.key, Math.floor(Date.now() / 1000) + 3600);
    await request(
      '$cbs',
      {
        message_id: 'ops',
        application_properties: { operation: 'put-token', type: 'jwt', name: resource },
        body: token,
      } as Message,
      undefined,
    );
    let n = 0;
    for (const operation of [...names, 'com.microsoft:no-such-operation']) {
      const reply = await request(
        'shapes/Subscriptions/s/$management',
        {
          message_id: `op-${n++}`,
          application_properties: { operation },
          body: rhea.types.wrap_map({}),
        } as unknown as Message,
        'ops-replies',
      );
      const status = reply.application_properties?.statusCode as number;
      if (operation === 'com.microsoft:no-such-operation') assert.equal(status, 501);
      else assert.notEqual(status, 501, `${operation} answered 501`);
    }
  });
});
