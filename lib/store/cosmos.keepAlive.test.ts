// The embedded Cosmos server keeps an idle kept-alive connection open. @azure/cosmos's agent keeps idle sockets
// without a limit and reuses them; a server that closes them after Node's default 5 s races the client's next
// write on that socket, which then fails with ECONNRESET and is not retried.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { Socket } from 'node:net';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';

let cosmos: EmbeddedCosmos;
const agent = new http.Agent({ keepAlive: true });

before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
});
after(async () => {
  agent.destroy();
  await cosmos.close();
});

test('an idle kept-alive connection stays open past the 5 s Node closes it after by default', async () => {
  const socket = await new Promise<Socket>((resolve, reject) => {
    let held: Socket | undefined;
    const req = http.get({ host: '127.0.0.1', port: cosmos.port, path: '/', agent }, (res) => {
      res.resume();
      // The agent takes the socket back into its pool once the response has ended.
      res.on('end', () => (held ? setImmediate(() => resolve(held as Socket)) : reject(new Error('no socket'))));
    });
    req.on('socket', (s) => (held = s));
    req.on('error', reject);
  });
  assert.equal(agent.freeSockets[Object.keys(agent.freeSockets)[0] ?? '']?.length, 1, 'the connection is kept alive, idle in the pool');
  let closedAt: number | undefined;
  const start = Date.now();
  socket.once('close', () => (closedAt = Date.now() - start));
  await new Promise((r) => setTimeout(r, 6_500));
  assert.equal(closedAt, undefined, `the server closed the idle connection after ${closedAt} ms`);
  assert.equal(socket.destroyed, false);
});
