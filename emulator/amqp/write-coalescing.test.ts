// Writes of one tick leave as one batch, in order, and nothing is lost when the socket ends right after them.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { coalesceWrites } from './write-coalescing.ts';

async function socketPair(): Promise<{ client: net.Socket; server: net.Socket; close(): Promise<void> }> {
  const listener = net.createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<net.Socket>((resolve) => listener.once('connection', resolve));
  const client = net.connect((listener.address() as net.AddressInfo).port, '127.0.0.1');
  const server = await accepted;
  return {
    client,
    server,
    close: async () => {
      client.destroy();
      server.destroy();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}

function readAll(socket: net.Socket): Promise<string> {
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  return new Promise((resolve) => socket.once('end', () => resolve(Buffer.concat(chunks).toString())));
}

test('writes of one tick are held until the next tick, then flushed together in order', async () => {
  const { client, server, close } = await socketPair();
  try {
    coalesceWrites(server);
    const received = readAll(client);
    server.write('a');
    server.write('b');
    assert.equal(server.writableCorked, 1, 'held while the tick runs');
    await new Promise<void>((resolve) => process.nextTick(resolve));
    assert.equal(server.writableCorked, 0, 'flushed on the next tick');
    server.write('c');
    server.end();
    assert.equal(await received, 'abc');
  } finally {
    await close();
  }
});

test('a socket ended in the same tick as its writes still sends them', async () => {
  const { client, server, close } = await socketPair();
  try {
    coalesceWrites(server);
    const received = readAll(client);
    server.write('open');
    server.write('close');
    server.end();
    assert.equal(await received, 'openclose');
  } finally {
    await close();
  }
});
