// rhea hands every AMQP frame to the socket on its own (one socket.write per frame). A disposition answer, a
// flow and a few transfers produced in one turn of the event loop thus cost a syscall each here and, with
// TCP_NODELAY, a TCP segment and a read each in the client. Corking the socket at the first write of a tick
// and uncorking it on the next tick sends them with one writev. Only the write is deferred: rhea has already
// serialised each frame (it mutates some performatives right after queueing them, so serialising later would
// change what is sent), and bytes and order are unchanged. socket.end() flushes corked data itself.

import type { Socket } from 'node:net';

export function coalesceWrites(socket: Socket): void {
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  let corked = false;
  const uncork = (): void => {
    corked = false;
    if (!socket.destroyed && socket.writableCorked > 0) socket.uncork();
  };
  socket.write = ((...args: unknown[]): boolean => {
    if (!corked && !socket.destroyed && !socket.writableEnded) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return write(...args);
  }) as Socket['write'];
}
