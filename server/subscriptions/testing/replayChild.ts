// A console process that only runs one dead-letter replay, so a test can kill it midway (SIGKILL) and check
// that nothing was lost and nothing delivered twice. Settings come from the environment; it prints nothing
// but errors. REPLAY_DIE_AFTER_CLAIM / REPLAY_DIE_AFTER_SEND = n make it kill itself at the n-th dead letter
// right after its `sending` claim is stored / right after its send resolved - the two points where a crash
// leaves the journal in `sending`.
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { createStore } from '../../../lib/store/index.ts';
import { PlatformDocs } from '../../heartbeat/platformDocs.ts';
import { replayDeadLetters, type ReplayCrashPoints } from '../replay.ts';
import { ReplayJournal } from '../replayJournal.ts';

const env = process.env;
const sb = createServiceBusClients(env.NIMBUS_SERVICEBUS_CONNECTION_STRING!);
const sending = createServiceBusClients(env.NIMBUS_SERVICEBUS_CONNECTION_STRING!, { client: { retryOptions: { maxRetries: 0 } } });
const conn = { endpoint: env.NIMBUS_COSMOS_ENDPOINT!, key: env.NIMBUS_COSMOS_KEY!, database: env.NIMBUS_COSMOS_DATABASE! };
const store = await createStore(conn);
const docs = new PlatformDocs(conn);

const dieAt = (n: string | undefined) => {
  if (!n) return undefined;
  let seen = 0;
  return () => {
    if (++seen === Number(n)) process.kill(process.pid, 'SIGKILL');
  };
};
const crashPoints: ReplayCrashPoints = {};
const afterClaim = dieAt(env.REPLAY_DIE_AFTER_CLAIM);
const afterSend = dieAt(env.REPLAY_DIE_AFTER_SEND);
if (afterClaim) crashPoints.afterClaim = afterClaim;
if (afterSend) crashPoints.afterSend = afterSend;

await replayDeadLetters(
  // Progress after every message, so the test can kill it at a known point.
  { client: sb.client, sendClient: sending.client, store, journal: new ReplayJournal(store.database), docs, progressEveryMs: 0, crashPoints },
  {
    topic: env.REPLAY_TOPIC!,
    subscription: env.REPLAY_SUBSCRIPTION!,
    selection: { all: true, ...(env.REPLAY_REASON ? { reason: env.REPLAY_REASON } : {}) },
    auditor: 'child',
    operationId: env.REPLAY_OPERATION!,
  },
);
docs.close();
await store.close();
await sending.close();
await sb.close();
