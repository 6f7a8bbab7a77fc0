// The set-up of the tests that fault the Resolver's store at the wire and read readiness as the console would
// (outage.test.ts, denied.test.ts): a harness whose store is behind a fault proxy, and a console store of its own
// that reaches Cosmos directly, so only the Resolver meets the faults and /api/ready reports the Resolver's word.
import { randomUUID } from 'node:crypto';
import { closeSteps } from '../lib/concurrency/closeSteps.ts';
import { createStore } from '../lib/store/index.ts';
import type { FaultProxy } from '../lib/store/testing/faultProxy.ts';
import type { ConsoleContext } from '../server/context.ts';
import { checkReady, type Readiness } from '../server/ready.ts';
import { CLOSE_STEP_BOUND_MS, ResolverHarness } from './testHarness.ts';

export interface StoreFaultHarness {
  harness: ResolverHarness;
  proxy: FaultProxy;
  /** /api/ready's answer, from the console's direct store and the harness's broker. */
  ready(): Promise<Readiness>;
  close(): Promise<void>;
}

export async function startStoreFaultHarness(): Promise<StoreFaultHarness> {
  const { harness, proxy } = await ResolverHarness.startBehindProxy();
  const direct = await createStore({ endpoint: harness.cosmos.endpoint, key: harness.cosmos.key, database: `ready-${randomUUID().slice(0, 8)}` }).catch(
    async (err: unknown) => {
      await harness.close();
      throw err;
    },
  );
  return {
    harness,
    proxy,
    ready: () => checkReady({ store: direct, serviceBus: { admin: harness.clients.admin } } as unknown as ConsoleContext),
    // Both run, each bounded, whatever the other does; the error names the step (closeSteps).
    close: () =>
      closeSteps(
        [
          { name: 'console store close', run: () => direct.close() },
          { name: 'harness close', run: () => harness.close() },
        ],
        // The harness bounds each of its own steps; this bound only has to outlast all of them.
        CLOSE_STEP_BOUND_MS * 8,
      ),
  };
}
