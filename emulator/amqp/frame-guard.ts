// A passive watcher on an AMQP socket that refuses oversized frames before rhea buffers them. rhea trusts the
// 4-byte size prefix of every frame and would accumulate up to 4 GiB waiting for one; a hostile or broken
// peer could exhaust memory that way. Protocol headers ("AMQP" + 4 bytes, sent once before SASL and once
// after it) are skipped; everything else is a frame whose declared size must stay under the limit.

const AMQP = 0x414d5150; // "AMQP" read as a big-endian uint32

export interface FrameGuard {
  /** Feed every chunk read from the socket; returns false once a frame exceeded the limit. */
  observe(chunk: Buffer): boolean;
}

export function createFrameGuard(maxFrameBytes: number): FrameGuard {
  let pending = Buffer.alloc(0); // bytes of a size prefix or header not yet complete
  let skip = 0; // bytes of the current frame body still to pass through
  let failed = false;
  return {
    observe(chunk: Buffer): boolean {
      if (failed) return false;
      let offset = 0;
      while (offset < chunk.length) {
        if (skip > 0) {
          const n = Math.min(skip, chunk.length - offset);
          skip -= n;
          offset += n;
          continue;
        }
        const need = 8 - pending.length;
        const take = chunk.subarray(offset, offset + need);
        pending = pending.length ? Buffer.concat([pending, take]) : Buffer.from(take);
        offset += take.length;
        if (pending.length < 4) continue;
        const size = pending.readUInt32BE(0);
        if (size === AMQP) {
          if (pending.length < 8) continue;
          pending = Buffer.alloc(0);
          continue;
        }
        if (size < 8 || size > maxFrameBytes) {
          failed = true;
          return false;
        }
        // The prefix (and whatever of the frame we already consumed into `pending`) counts towards the frame.
        skip = size - pending.length;
        pending = Buffer.alloc(0);
      }
      return true;
    },
  };
}
