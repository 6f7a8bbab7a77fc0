// How the console learns the broker's per-message size (server/messageSize.ts BrokerMessageSize), with a stand-in for
// the admin client's getTopic (pure logic; the real client against the emulator is server/manager/brokerLimit.test.ts).
// A read is settled within its bound even when getTopic ignores the abort signal (before, every command and agent
// publish awaiting the size hung with it), and a failed read is retried after the back-off (before, one failed read at
// open held the console to 256 KB until it restarted). A 401/403 stays the Standard limit, saying why.
// A Manager command's size is the smaller of the Manager topic's and its endpoint topic's (CommandMessageSize): an
// endpoint topic not read (a failed read waiting for its retry, no Manage right, no size reported) leaves the Manager
// topic's size as it was, never the Standard tier's; and a read that fails never lowers a size read before.
// A size read is read again after the refresh interval (10 min), the last size read used while that re-read is in
// flight and when it fails: before, a size read was kept until the console restarted, so an operator's change to a
// topic's size (raised on Premium, or lowered) went unseen.
// At most one getTopic per topic is out: a request hung past its bound is waited on by later reads, not joined by
// another - before, each back-off sent one more beside the hung ones, piling up while the admin endpoint was silent.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BROKER_MESSAGE_BYTES, BrokerMessageSize, CommandMessageSize } from './messageSize.ts';

type Admin = ConstructorParameters<typeof BrokerMessageSize>[0];
const adminOf = (getTopic: () => Promise<unknown>) => ({ getTopic }) as unknown as Admin;

function recorder() {
  const lines: Array<{ level: 'info' | 'warn'; o: Record<string, unknown>; m: string }> = [];
  return { lines, info: (o: object, m: string) => lines.push({ level: 'info', o: o as Record<string, unknown>, m }), warn: (o: object, m: string) => lines.push({ level: 'warn', o: o as Record<string, unknown>, m }) };
}

const failure = (statusCode: number) => Object.assign(new Error('https://secret.servicebus.windows.net refused'), { name: 'RestError', statusCode });

describe("the broker's message size", () => {
  // The bound is 50 ms; the test's own timeout only turns a hang into a failure.
  test('a getTopic that never settles (ignores the abort signal): the Standard limit at the bound, and the next use does not wait', { timeout: 60_000 }, async () => {
    let calls = 0;
    const log = recorder();
    const size = new BrokerMessageSize(adminOf(() => (calls++, new Promise(() => {}))), 'Manager', log, { timeoutMs: 50 });
    // The bound's timer is unref'd (a hung read must not hold a process open); the console's server keeps the loop
    // alive, here this interval does.
    const alive = setInterval(() => {}, 1_000);
    try {
      assert.equal(await size.bytes(), BROKER_MESSAGE_BYTES);
    } finally {
      clearInterval(alive);
    }
    assert.equal(await size.bytes(), BROKER_MESSAGE_BYTES);
    assert.equal(calls, 1, 'not read again before the back-off');
    assert.deepEqual(log.lines.map((l) => [l.level, l.o.reason]), [['warn', 'the topic did not answer within 50 ms']]);
  });

  test('a getTopic that never settles: one request outstanding at most over many back-offs, each re-read failing at its bound', { timeout: 60_000 }, async () => {
    let now = 0;
    let calls = 0;
    const log = recorder();
    const size = new BrokerMessageSize(adminOf(() => (calls++, new Promise(() => {}))), 'Manager', log, { timeoutMs: 20, rereadAfterMs: 60_000, now: () => now });
    const alive = setInterval(() => {}, 1_000);
    try {
      for (let period = 0; period < 5; period++) {
        assert.equal(await size.bytes(), BROKER_MESSAGE_BYTES, 'the Standard limit, the request answered at the bound');
        await size.idle(); // the re-read started by that use, answered at its bound
        now += 60_000;
      }
    } finally {
      clearInterval(alive);
    }
    // Before, each back-off sent one more getTopic, the earlier ones still hanging: 5 here, one more every minute.
    assert.equal(calls, 1, 'no second request while the first has not settled');
    const warned = log.lines.filter((l) => l.level === 'warn');
    assert.equal(warned.length, 5, 'each re-read that found the request unanswered is a failed read, logged');
    assert.deepEqual(warned.slice(1).map((l) => l.o.requestOutstandingMs), [60_000, 120_000, 180_000, 240_000], 'saying how long the request has been out');
  });

  test('a request out for a refresh interval is given up: the next read sends a new one, which may answer', { timeout: 60_000 }, async () => {
    let now = 0;
    let calls = 0;
    const size = new BrokerMessageSize(
      adminOf(() => (++calls === 1 ? new Promise(() => {}) : Promise.resolve({ maxMessageSizeInKilobytes: 1024 }))),
      'Manager',
      recorder(),
      { timeoutMs: 20, rereadAfterMs: 60_000, refreshAfterMs: 600_000, now: () => now },
    );
    const alive = setInterval(() => {}, 1_000);
    try {
      // Nine back-offs within the refresh interval: the first request, never answering, is the only one.
      for (let period = 0; period < 10; period++) {
        assert.equal(await size.bytes(), BROKER_MESSAGE_BYTES);
        await size.idle();
        now += 60_000;
      }
      assert.equal(calls, 1, 'one request while the first is out for less than the refresh interval');
      // Ten minutes out: given up; this read sends a second request, which answers.
      await size.bytes();
      await size.idle();
    } finally {
      clearInterval(alive);
    }
    assert.equal(calls, 2, 'a new request once the first has been out for the refresh interval');
    assert.equal(await size.bytes(), 1024 * 1024, 'the new request read the size');
  });

  test('a hung re-read after a size was read: that size kept, one request outstanding; once it settles the next re-read sends a new one', { timeout: 60_000 }, async () => {
    let now = 0;
    let release!: (v: unknown) => void;
    const answers: Array<() => Promise<unknown>> = [
      () => Promise.resolve({ maxMessageSizeInKilobytes: 1024 }),
      () => new Promise((r) => (release = r)), // hangs past its bound
      () => Promise.resolve({ maxMessageSizeInKilobytes: 2048 }),
    ];
    let calls = 0;
    const size = new BrokerMessageSize(adminOf(() => answers[calls++]!()), 'Manager', recorder(), { timeoutMs: 20, rereadAfterMs: 60_000, refreshAfterMs: 600_000, now: () => now });
    const alive = setInterval(() => {}, 1_000);
    try {
      assert.equal(await size.bytes(), 1024 * 1024);
      now += 600_000;
      for (let period = 0; period < 4; period++) {
        assert.equal(await size.bytes(), 1024 * 1024, 'the size read before stands');
        await size.idle();
        now += 60_000;
      }
      assert.equal(calls, 2, 'the hung request is the only one out');
      release({ maxMessageSizeInKilobytes: 512 }); // settles long after its bound, with no read waiting on it: not used
      await new Promise((r) => setImmediate(r));
      assert.equal(await size.bytes(), 1024 * 1024, 'an answer after every bound is not taken');
      await size.idle();
      assert.equal(calls, 3, 'settled, it no longer holds the next re-read back');
      assert.equal(await size.bytes(), 2048 * 1024);
    } finally {
      clearInterval(alive);
    }
  });

  test('a request hung past one bound that answers within a later re-read\'s bound: that answer is used, no second request', async () => {
    let now = 0;
    let release!: (v: unknown) => void;
    let calls = 0;
    const size = new BrokerMessageSize(adminOf(() => (calls++, new Promise((r) => (release = r)))), 'Manager', recorder(), { timeoutMs: 1_000, rereadAfterMs: 60_000, now: () => now });
    const alive = setInterval(() => {}, 1_000);
    try {
      assert.equal(await size.bytes(), BROKER_MESSAGE_BYTES, 'not answered within the bound');
      now += 60_000;
      const pending = size.bytes(); // the re-read: waits on the same request, none sent
      release({ maxMessageSizeInKilobytes: 4096 });
      assert.equal(await pending, BROKER_MESSAGE_BYTES, 'the request that starts a re-read uses the value known');
      await size.idle();
      assert.equal(await size.bytes(), 4096 * 1024, "the late answer, within the re-read's bound, is used");
      assert.equal(calls, 1);
    } finally {
      clearInterval(alive);
    }
  });

  test('a failed read (503) is read again on the first use after the back-off, one read at a time, the request not waiting on it', async () => {
    let now = 1_000;
    const answers: Array<() => Promise<unknown>> = [() => Promise.reject(failure(503))];
    let release!: (v: unknown) => void;
    answers.push(() => new Promise((r) => (release = r)));
    let calls = 0;
    const log = recorder();
    const size = new BrokerMessageSize(adminOf(() => answers[calls++]!()), 'Manager', log, { rereadAfterMs: 60_000, now: () => now });
    assert.equal(await size.bytes(), BROKER_MESSAGE_BYTES, 'the first read failed: the Standard limit');
    assert.equal(log.lines[0]!.level, 'warn');
    assert.equal(log.lines[0]!.o.statusCode, 503);
    assert.doesNotMatch(String(log.lines[0]!.o.reason), /Manage/, 'a 503 is not blamed on the Manage right');
    assert.ok(!JSON.stringify(log.lines).includes('secret.servicebus'), "the error's text is not logged");
    now += 59_999;
    assert.equal(await size.bytes(), BROKER_MESSAGE_BYTES);
    assert.equal(calls, 1, 'not read again within the back-off');
    now += 1;
    // The re-read is in flight (its answer held back): requests use the current value and start no second read.
    assert.equal(await size.bytes(), BROKER_MESSAGE_BYTES);
    assert.equal(await size.bytes(), BROKER_MESSAGE_BYTES);
    assert.equal(calls, 2, 'one re-read');
    release({ maxMessageSizeInKilobytes: 1024 });
    await size.idle();
    assert.equal(await size.bytes(), 1024 * 1024, 'the re-read is used');
    assert.deepEqual(log.lines.at(-1), { level: 'info', o: { topic: 'Manager', maxMessageSizeInKilobytes: 1024 }, m: 'broker message size limit read from the topic' });
  });

  test('a size read is read again after the refresh interval: a raised or lowered size is used, the last one read meanwhile and when a re-read fails', async () => {
    let now = 0;
    let release!: (v: unknown) => void;
    const answers: Array<() => Promise<unknown>> = [
      () => Promise.resolve({ maxMessageSizeInKilobytes: 1024 }),
      () => new Promise((r) => (release = r)), // the operator raised it (Premium: up to 100 MB); held back
      () => Promise.reject(failure(503)),
      () => Promise.resolve({ maxMessageSizeInKilobytes: 512 }), // and lowered it
      () => Promise.resolve({ maxMessageSizeInKilobytes: 512 }),
    ];
    let calls = 0;
    const log = recorder();
    const size = new BrokerMessageSize(adminOf(() => answers[calls++]!()), 'Manager', log, { rereadAfterMs: 60_000, refreshAfterMs: 600_000, now: () => now });
    assert.equal(await size.bytes(), 1024 * 1024);
    now += 599_999;
    assert.equal(await size.bytes(), 1024 * 1024);
    assert.equal(calls, 1, 'not read again within the refresh interval');
    now += 1;
    // The refresh is in flight (its answer held back): requests use the size read before and start no second read.
    assert.equal(await size.bytes(), 1024 * 1024);
    assert.equal(await size.known(), 1024 * 1024);
    assert.equal(calls, 2, 'one re-read');
    release({ maxMessageSizeInKilobytes: 100 * 1024 });
    await size.idle();
    assert.equal(await size.bytes(), 100 * 1024 * 1024, 'the raised size is used');
    assert.deepEqual(log.lines.at(-1), { level: 'info', o: { topic: 'Manager', maxMessageSizeInKilobytes: 100 * 1024, previousKilobytes: 1024 }, m: 'broker message size limit changed on the topic' });

    now += 600_000;
    await size.bytes(); // starts the refresh, which fails
    await size.idle();
    assert.equal(await size.bytes(), 100 * 1024 * 1024, 'a failed re-read keeps the size read before');
    assert.deepEqual(log.lines.at(-1)!.level, 'warn');
    assert.deepEqual([log.lines.at(-1)!.o.statusCode, log.lines.at(-1)!.o.keptKilobytes, log.lines.at(-1)!.o.readAgainAfterMs], [503, 100 * 1024, 60_000]);
    assert.equal(calls, 3);
    now += 59_999;
    assert.equal(await size.bytes(), 100 * 1024 * 1024);
    assert.equal(calls, 3, 'a failed re-read is retried after the back-off, not before');
    now += 1;
    await size.bytes();
    await size.idle();
    assert.equal(await size.bytes(), 512 * 1024, 'the lowered size is used');
    assert.equal(calls, 4);
    const logged = log.lines.length;
    now += 600_000;
    await size.bytes();
    await size.idle();
    assert.equal(await size.bytes(), 512 * 1024);
    assert.equal(calls, 5);
    assert.equal(log.lines.length, logged, 'an unchanged size is not logged again');
  });

  test('a re-read answered 401/403 or no usable size after a size was read: that size kept, read again after the refresh interval', async () => {
    for (const answer of [() => Promise.reject(failure(403)), () => Promise.resolve({})]) {
      let now = 0;
      const answers = [() => Promise.resolve({ maxMessageSizeInKilobytes: 2048 }), answer, () => Promise.resolve({ maxMessageSizeInKilobytes: 4096 })];
      let calls = 0;
      const log = recorder();
      const size = new BrokerMessageSize(adminOf(() => answers[calls++]!()), 'Manager', log, { rereadAfterMs: 60_000, refreshAfterMs: 600_000, now: () => now });
      assert.equal(await size.bytes(), 2048 * 1024);
      now += 600_000;
      await size.bytes();
      await size.idle();
      assert.equal(await size.bytes(), 2048 * 1024, 'the size read before is kept');
      assert.equal(log.lines.at(-1)!.level, 'warn');
      assert.equal(log.lines.at(-1)!.o.readAgainAfterMs, 600_000);
      now += 60_000;
      await size.bytes();
      assert.equal(calls, 2, 'not read again after the short back-off of a blip');
      now += 540_000;
      await size.bytes();
      await size.idle();
      assert.equal(await size.bytes(), 4096 * 1024, 'read again after the refresh interval');
    }
  });

  test('no Manage right (401, 403): the Standard limit for the process, saying so once', async () => {
    for (const status of [401, 403]) {
      let now = 0;
      let calls = 0;
      const log = recorder();
      const size = new BrokerMessageSize(adminOf(() => (calls++, Promise.reject(failure(status)))), 'Manager', log, { now: () => now });
      assert.equal(await size.bytes(), BROKER_MESSAGE_BYTES);
      now += 3_600_000;
      assert.equal(await size.bytes(), BROKER_MESSAGE_BYTES);
      assert.equal(calls, 1, `${status}: not read again`);
      assert.equal(log.lines.length, 1);
      assert.match(String(log.lines[0]!.o.reason), /no Manage right/);
      assert.equal(log.lines[0]!.o.statusCode, status);
    }
  });
});

describe("a Manager command's size: the smaller of the Manager topic's and the endpoint topic's", () => {
  /** A stand-in admin answering per topic; `calls` counts the reads of each. */
  function topics(answers: Record<string, () => Promise<unknown>>) {
    const calls: Record<string, number> = {};
    const admin = { getTopic: (topic: string) => ((calls[topic] = (calls[topic] ?? 0) + 1), answers[topic]!()) } as unknown as Admin;
    return { admin, calls };
  }
  const kb = (n: number) => () => Promise.resolve({ maxMessageSizeInKilobytes: n });

  test('each endpoint topic read once, on its first command; the smaller size wins', async () => {
    const { admin, calls } = topics({ Manager: kb(1024), small: kb(256), large: kb(4096), 'no-size': () => Promise.resolve({}), denied: () => Promise.reject(failure(401)) });
    const log = recorder();
    const manager = new BrokerMessageSize(admin, 'Manager', log);
    const sizes = new CommandMessageSize(admin, manager, log);
    assert.equal(await sizes.bytes('small'), 256 * 1024, 'the endpoint topic takes less');
    assert.equal(await sizes.bytes('large'), 1024 * 1024, 'the Manager topic takes less');
    assert.equal(await sizes.bytes('no-size'), 1024 * 1024, "no size reported: the Manager topic's stands for it");
    assert.equal(await sizes.bytes('denied'), 1024 * 1024, "no Manage right on it: the Manager topic's stands for it");
    for (const ep of ['small', 'large', 'no-size', 'denied']) await sizes.bytes(ep);
    assert.deepEqual(calls, { Manager: 1, small: 1, large: 1, 'no-size': 1, denied: 1 }, 'each topic read once');
    assert.deepEqual(
      log.lines.filter((l) => l.level === 'warn').map((l) => [l.o.topic, l.m]),
      [
        ['no-size', "broker message size limit not read: the Manager topic's stands for it"],
        ['denied', "broker message size limit not read: the Manager topic's stands for it"],
      ],
    );
  });

  test("an agent's publish (sent straight to the endpoint topic): that topic's size alone, the Manager topic's until it is read", async () => {
    const { admin, calls } = topics({ Manager: kb(1024), small: kb(256), large: kb(4096), denied: () => Promise.reject(failure(403)) });
    const log = recorder();
    const sizes = new CommandMessageSize(admin, new BrokerMessageSize(admin, 'Manager', log), log);
    assert.equal(await sizes.topicBytes('small'), 256 * 1024, 'the endpoint topic takes less');
    assert.equal(await sizes.topicBytes('large'), 4096 * 1024, 'the endpoint topic takes more: the Manager topic is not on the way');
    assert.equal(await sizes.topicBytes('denied'), 1024 * 1024, "not read: the Manager topic's stands for it");
    assert.equal(await sizes.bytes('large'), 1024 * 1024, 'a command to it is still held to the smaller');
    assert.deepEqual(calls, { Manager: 1, small: 1, large: 1, denied: 1 }, 'commands and publishes share the reads');
  });

  test("an endpoint topic whose read failed keeps the Manager topic's size read before (not 256 KB) until its retry reads it", async () => {
    let now = 0;
    const answers: Array<() => Promise<unknown>> = [() => Promise.reject(failure(503)), kb(512)];
    let reads = 0;
    const { admin, calls } = topics({ Manager: kb(2048), ep: () => answers[reads++]!() });
    const log = recorder();
    const options = { rereadAfterMs: 60_000, now: () => now };
    const sizes = new CommandMessageSize(admin, new BrokerMessageSize(admin, 'Manager', log, options), log, options);
    assert.equal(await sizes.bytes('ep'), 2048 * 1024, "the endpoint topic's read failed: the Manager topic's 2 MB, not the Standard 256 KB");
    now += 59_999;
    assert.equal(await sizes.bytes('ep'), 2048 * 1024, 'while the failed read waits for its retry');
    now += 1;
    await sizes.bytes('ep'); // starts the re-read; the request does not wait for it
    await sizes.idle();
    assert.equal(await sizes.bytes('ep'), 512 * 1024, 'the re-read is used');
    assert.deepEqual(calls, { Manager: 1, ep: 2 });
  });

  test("the Manager topic not read: the Standard 256 KB, whatever an endpoint topic reports", async () => {
    const { admin } = topics({ Manager: () => Promise.reject(failure(503)), ep: kb(1024) });
    const sizes = new CommandMessageSize(admin, new BrokerMessageSize(admin, 'Manager', recorder()), recorder());
    assert.equal(await sizes.bytes('ep'), BROKER_MESSAGE_BYTES);
  });

  test("an endpoint topic's size changed by an operator is seen after the refresh interval, by commands and publishes; a failed re-read lowers nothing", async () => {
    let now = 0;
    const epAnswers = [kb(8192), () => Promise.reject(failure(503)), kb(256)];
    let epReads = 0;
    const { admin, calls } = topics({ Manager: kb(4096), ep: () => epAnswers[epReads++]!() });
    const options = { rereadAfterMs: 60_000, refreshAfterMs: 600_000, now: () => now };
    const manager = new BrokerMessageSize(admin, 'Manager', recorder(), options);
    const sizes = new CommandMessageSize(admin, manager, recorder(), options);
    assert.deepEqual([await sizes.bytes('ep'), await sizes.topicBytes('ep')], [4096 * 1024, 8192 * 1024]);
    now += 600_000;
    await sizes.bytes('ep'); // starts both topics' refreshes; the endpoint topic's fails
    await sizes.idle();
    assert.deepEqual([await sizes.bytes('ep'), await sizes.topicBytes('ep')], [4096 * 1024, 8192 * 1024], 'the sizes read before are kept');
    now += 60_000;
    await sizes.topicBytes('ep'); // the endpoint topic's retry reads 256 KB
    await sizes.idle();
    assert.deepEqual([await sizes.bytes('ep'), await sizes.topicBytes('ep')], [256 * 1024, 256 * 1024], 'the lowered size is used');
    assert.deepEqual(calls, { Manager: 2, ep: 3 });
  });

  test("a re-send of a claim: held to the sizes read only, undefined (the broker decides) when none is; a fresh command keeps 256 KB", async () => {
    let now = 0;
    const answers: Record<string, Array<() => Promise<unknown>>> = {
      Manager: [() => Promise.reject(failure(503)), kb(1024)],
      ep: [() => Promise.reject(failure(503)), kb(2048)],
      Resolver: [() => Promise.reject(failure(503)), kb(4096)],
    };
    const reads: Record<string, number> = {};
    const { admin } = topics(Object.fromEntries(Object.keys(answers).map((t) => [t, () => answers[t]![(reads[t] = (reads[t] ?? 0) + 1) - 1]!()])));
    const options = { rereadAfterMs: 60_000, now: () => now };
    const resolver = new BrokerMessageSize(admin, 'Resolver', recorder(), options);
    const sizes = new CommandMessageSize(admin, new BrokerMessageSize(admin, 'Manager', recorder(), options), recorder(), options, [resolver]);
    assert.equal(await sizes.resendBytes('ep'), undefined, 'every read failed: no limit of the console');
    assert.equal(await sizes.bytes('ep'), BROKER_MESSAGE_BYTES, "a fresh command: the Standard tier's");
    now += 60_000;
    await sizes.bytes('ep'); // the retries read 1 MB, 2 MB, 4 MB
    await sizes.idle();
    assert.equal(await sizes.resendBytes('ep'), 1024 * 1024, 'the smallest read');
    assert.equal(await sizes.bytes('ep'), 1024 * 1024);
  });

  test("a re-send with the Manager topic's read failed and the endpoint topic's read: the endpoint topic's, not 256 KB", async () => {
    const { admin } = topics({ Manager: () => Promise.reject(failure(503)), ep: kb(1024) });
    const sizes = new CommandMessageSize(admin, new BrokerMessageSize(admin, 'Manager', recorder()), recorder());
    assert.equal(await sizes.resendBytes('ep'), 1024 * 1024);
    assert.equal(await sizes.bytes('ep'), BROKER_MESSAGE_BYTES, 'a fresh command keeps the fallback');
  });

  test('the Resolver topic, which every message is also forwarded to, holds commands and publishes to its size once read, and nothing before', async () => {
    let now = 0;
    const resolverAnswers = [() => Promise.reject(failure(503)), kb(1024)];
    let resolverReads = 0;
    const { admin, calls } = topics({ Manager: kb(4096), ep: kb(4096), Resolver: () => resolverAnswers[resolverReads++]!() });
    const options = { rereadAfterMs: 60_000, now: () => now };
    const resolver = new BrokerMessageSize(admin, 'Resolver', recorder(), { ...options, fallback: 'the other topics stand for it' });
    const sizes = new CommandMessageSize(admin, new BrokerMessageSize(admin, 'Manager', recorder(), options), recorder(), options, [resolver]);
    assert.deepEqual([await sizes.bytes('ep'), await sizes.topicBytes('ep')], [4096 * 1024, 4096 * 1024], 'its read failed: it holds nothing (not 256 KB)');
    now += 60_000;
    await sizes.bytes('ep'); // its retry reads 1 MB
    await sizes.idle();
    assert.deepEqual([await sizes.bytes('ep'), await sizes.topicBytes('ep')], [1024 * 1024, 1024 * 1024], 'the forward to it takes less than the endpoint topic');
    assert.deepEqual(calls, { Manager: 1, ep: 1, Resolver: 2 });
  });
});
