// The store a job's runner reads receipts through (listAudits), with a test's hook in front: the runner's tests make
// a receipt read fail (the store not answering) or make something happen meanwhile (a cancel, a successor), at the
// read they name, without a fake store: every other call, and the read itself, go to the real one.
import type { MessageStore } from '../../../lib/store/index.ts';

type ListAuditsArgs = Parameters<MessageStore['listAudits']>;

/** `store`, whose listAudits first awaits `before` with the call's arguments (it may throw: the read fails). */
export function beforeReceiptRead(store: MessageStore, before: (...args: ListAuditsArgs) => void | Promise<void>): MessageStore {
  return new Proxy(store, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (name === 'listAudits') {
        return async (...args: ListAuditsArgs) => {
          await before(...args);
          return target.listAudits(...args);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A receipt read the store does not answer, as a Cosmos 503 would fail it. */
export function receiptReadFails(): never {
  throw new Error('simulated Cosmos 503 on the receipt read');
}
