// $cbs replies arrive pre-settled. A reply the client has to acknowledge makes it send a lone disposition the
// broker never answers; its next frame (the session receiver's attach after a put-token) then waits in the
// client's Nagle buffer for our delayed TCP ACK - 46 ms on every acceptNextSession before this was fixed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import rhea from 'rhea';
import { startEmulator } from '../index.ts';
import { createSasToken } from '../auth/sas-token.ts';

test('a $cbs put-token reply is sent settled, so the client has nothing to acknowledge', async () => {
  const emulator = await startEmulator({ port: 0, logLevel: 'silent' });
  const connection = rhea
    .create_container()
    .connect({ host: '127.0.0.1', port: emulator.port, reconnect: false });
  try {
    const reply = await new Promise<{ settled: boolean; status: unknown }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no $cbs reply')), 10_000);
      const receiver = connection.open_receiver({
        source: { address: '$cbs' },
        target: { address: 'cbs-reply' },
      });
      receiver.on('message', (ctx) => {
        clearTimeout(timer);
        resolve({
          settled: ctx.delivery?.remote_settled === true,
          status: ctx.message?.application_properties?.['status-code'],
        });
      });
      receiver.once('receiver_open', () => {
        const sender = connection.open_sender({ target: { address: '$cbs' } });
        sender.once('sendable', () => {
          sender.send({
            reply_to: 'cbs-reply',
            message_id: 'put-1',
            application_properties: {
              operation: 'put-token',
              type: 'servicebus.windows.net:sastoken',
              name: 'sb://x/t',
            },
            body: createSasToken(
              'sb://x/t',
              'RootManageSharedAccessKey',
              emulator.key,
              Math.floor(Date.now() / 1000) + 600,
            ),
          });
        });
      });
    });
    assert.equal(reply.status, 202);
    assert.equal(reply.settled, true);
  } finally {
    connection.close();
    await emulator.close();
  }
});
