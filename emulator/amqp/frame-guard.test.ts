import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createFrameGuard } from './frame-guard.ts';

const header = Buffer.from('AMQP\x03\x01\x00\x00', 'latin1');
const frame = (size: number): Buffer => {
  const b = Buffer.alloc(size);
  b.writeUInt32BE(size, 0);
  b[4] = 2;
  return b;
};

test('frames within the limit pass, in any chunking, across both protocol headers', () => {
  const stream = Buffer.concat([
    header,
    frame(20),
    frame(100),
    Buffer.from('AMQP\x00\x01\x00\x00', 'latin1'),
    frame(1000),
  ]);
  for (const chunkSize of [1, 3, 7, 64, stream.length]) {
    const guard = createFrameGuard(1024);
    for (let i = 0; i < stream.length; i += chunkSize) {
      assert.equal(guard.observe(stream.subarray(i, i + chunkSize)), true, `chunk size ${chunkSize}`);
    }
  }
});

test('a frame declaring more than the limit is refused, even before its body arrives', () => {
  const guard = createFrameGuard(1024);
  const prefix = Buffer.alloc(8);
  prefix.writeUInt32BE(50 * 1024 * 1024, 0);
  assert.equal(guard.observe(Buffer.concat([header, frame(20)])), true);
  assert.equal(guard.observe(prefix), false);
  assert.equal(guard.observe(frame(20)), false);
});

test('a frame size smaller than the frame header is refused', () => {
  const guard = createFrameGuard(1024);
  const bad = Buffer.alloc(8);
  bad.writeUInt32BE(3, 0);
  assert.equal(guard.observe(Buffer.concat([header, bad])), false);
});
