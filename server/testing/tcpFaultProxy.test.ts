// The TCP fault proxy at the socket level: bytes pass while up; cut() refuses new connections and resets open
// ones; silence() keeps connections open but forwards nothing; restore() forwards again on the same port.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTcpFaultProxy, type TcpFaultProxy } from './tcpFaultProxy.ts';

let echo: net.Server;
/** Everything the upstream server received, in order. */
const received: string[] = [];
let proxy: TcpFaultProxy;

before(async () => {
  // The upstream side is reset too when the proxy is cut: that is expected, not an error of the test.
  echo = net.createServer((s) => s.on('error', () => undefined).on('data', (d) => received.push(d.toString())).pipe(s));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  proxy = await startTcpFaultProxy({ port: (echo.address() as net.AddressInfo).port });
});

after(async () => {
  await proxy.close();
  await new Promise<void>((r) => echo.close(() => r()));
});

const connect = (port: number) =>
  new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => resolve(s));
    s.once('error', reject);
  });

const roundTrip = (s: net.Socket, text: string) =>
  new Promise<string>((resolve, reject) => {
    s.once('data', (d) => resolve(d.toString()));
    s.once('error', reject);
    s.write(text);
  });

test('forwards while up, refuses and resets while cut, forwards again on the same port after restore', async () => {
  const open = await connect(proxy.port);
  assert.equal(await roundTrip(open, 'before'), 'before');

  const broken = new Promise<string>((resolve) => {
    open.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    open.once('close', () => resolve('closed'));
  });
  await proxy.cut();
  assert.equal(proxy.up, false);
  assert.equal(await broken, 'ECONNRESET', 'the open connection is reset, not closed politely');
  await assert.rejects(connect(proxy.port), (e: NodeJS.ErrnoException) => e.code === 'ECONNREFUSED');

  await proxy.restore();
  const again = await connect(proxy.port);
  assert.equal(await roundTrip(again, 'after'), 'after');
  again.destroy();
  assert.equal(proxy.accepted, 2);
});

test('silence() forwards nothing and closes nothing; restore() resets the silenced connections and forwards again', async () => {
  const open = await connect(proxy.port);
  assert.equal(await roundTrip(open, 'loud'), 'loud');
  let echoed = '';
  open.on('data', (d) => (echoed += d.toString()));
  const broken = new Promise<string>((resolve) => {
    open.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    open.once('close', () => resolve('closed'));
  });
  proxy.silence();
  open.write('lost');
  // A connection made while silent is accepted (the client cannot tell), and forwards nothing either.
  const late = await connect(proxy.port);
  late.on('error', () => undefined);
  late.write('lost too');
  await proxy.restore();
  assert.equal(await broken, 'ECONNRESET', 'the silenced connection is reset on restore');
  const again = await connect(proxy.port);
  // Written after the silenced bytes: had those been forwarded, they would have reached the server first.
  assert.equal(await roundTrip(again, 'after'), 'after');
  again.destroy();
  assert.equal(echoed, '');
  assert.ok(!received.some((r) => r.includes('lost')), `nothing written while silent was forwarded: ${received.join('|')}`);
});
