// A console replica that only runs bulk operations, so a test can kill it midway (SIGKILL) and check that a
// restarted runner resumes the job and that no event is acted on twice. Settings come from the environment
// (the console's NIMBUS_* variables); it prints "ready" once its runner has started.
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { createStore, LeaseStore } from '../../../lib/store/index.ts';
import { PlatformDocs } from '../../heartbeat/platformDocs.ts';
import { Manager } from '../../manager/manager.ts';
import { JobStore } from '../jobs.ts';
import { OperationsRunner } from '../runner.ts';

// A crash must be visible in the test's output, not a silently vanished replica.
process.on('uncaughtException', (err) => {
  process.stderr.write(`runner child: uncaught ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(70);
});
process.on('unhandledRejection', (err) => {
  process.stderr.write(`runner child: unhandled rejection ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(70);
});
const env = process.env;
const sb = createServiceBusClients(env.NIMBUS_SERVICEBUS_CONNECTION_STRING!);
const conn = { endpoint: env.NIMBUS_COSMOS_ENDPOINT!, key: env.NIMBUS_COSMOS_KEY!, database: env.NIMBUS_COSMOS_DATABASE! };
const store = await createStore(conn);
const docs = new PlatformDocs(conn);
const runner = new OperationsRunner({
  store,
  jobs: new JobStore(docs),
  leases: new LeaseStore(store.database),
  manager: new Manager({ store, client: sb.client }),
  scanEveryMs: 500,
}).start();
process.stdout.write('ready\n');
// A replica stays up until it is stopped, like a console with its HTTP server: the runner's own timers are unref'd,
// so a replica waiting for a dead one's lease to expire would otherwise just exit (code 0) with nothing to do.
const keepAlive = setInterval(() => undefined, 60_000);
process.on('SIGTERM', () => {
  clearInterval(keepAlive);
  void runner.stop().then(() => process.exit(0));
});
