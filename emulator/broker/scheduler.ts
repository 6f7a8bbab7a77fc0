// One timer for the whole broker: due work (lock expiry, session lock expiry, scheduled messages) sits in a
// heap and a single unref'd setTimeout is armed for the earliest item. Entries are never removed; a callback
// re-checks whether its work is still due (a renewed lock simply pushes a new entry), which keeps cancel O(1).

import { MinHeap } from './heap.ts';

interface Entry {
  at: number;
  order: number;
  run: () => void;
}

export class Scheduler {
  private readonly heap = new MinHeap<Entry>((a, b) => a.at < b.at || (a.at === b.at && a.order < b.order));
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Infinity;
  private order = 0;
  private closed = false;

  constructor(
    private readonly now: () => number,
    private readonly onError: (err: unknown) => void,
  ) {}

  at(time: number, run: () => void): void {
    if (this.closed) return;
    this.heap.push({ at: time, order: this.order++, run });
    if (time < this.armedFor) this.arm();
  }

  /** Runs everything due by now(). Tests with an injected clock call this after moving the clock. */
  runDue(): void {
    const now = this.now();
    for (;;) {
      const top = this.heap.peek();
      if (!top || top.at > now) break;
      this.heap.pop();
      try {
        top.run();
      } catch (err) {
        this.onError(err);
      }
    }
    this.arm();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.heap.clear();
  }

  private arm(): void {
    if (this.closed) return;
    const top = this.heap.peek();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Infinity;
    if (!top) return;
    // setTimeout caps at 2^31-1 ms; far-away items re-arm when that fires.
    const delay = Math.min(Math.max(0, top.at - this.now()), 2_147_483_647);
    this.armedFor = top.at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.armedFor = Infinity;
      this.runDue();
    }, delay);
    this.timer.unref();
  }
}
