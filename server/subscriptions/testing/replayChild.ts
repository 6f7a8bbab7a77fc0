// A console process that only runs one dead-letter replay, so a test can kill it midway (SIGKILL) and check
// that nothing was lost. Settings come from the environment; it prints nothing but errors.
import { createServiceBusClients } from '../../../lib/servicebus/index.ts';
import { createStore } from '../../../lib/store/index.ts';
import { PlatformDocs } from '../../heartbeat/platformDocs.ts';
import { replayDeadLetters } from '../replay.ts';

const env = process.env;
const sb = createServiceBusClients(env.NIMBUS_SERVICEBUS_CONNECTION_STRING!);
const conn = { endpoint: env.NIMBUS_COSMOS_ENDPOINT!, key: env.NIMBUS_COSMOS_KEY!, database: env.NIMBUS_COSMOS_DATABASE! };
const store = await createStore(conn);
const docs = new PlatformDocs(conn);
await replayDeadLetters(
  // Progress after every message, so the test can kill it at a known point.
  { client: sb.client, store, docs, progressEveryMs: 0 },
  { topic: env.REPLAY_TOPIC!, subscription: env.REPLAY_SUBSCRIPTION!, selection: { all: true }, auditor: 'child', operationId: env.REPLAY_OPERATION! },
);
docs.close();
await store.close();
await sb.close();
