// `npm start` until the console exists: runs the embedded Service Bus emulator on NIMBUS_EMULATOR_PORT
// (default 5672) with its data under NIMBUS_DATA_DIR/servicebus (default .nimbus/servicebus), and prints the
// connection string the other parts use.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { startEmulator } from '../emulator/index.ts';

const env = z
  .object({
    NIMBUS_EMULATOR_PORT: z.coerce.number().int().min(0).max(65535).default(5672),
    NIMBUS_DATA_DIR: z.string().min(1).default('.nimbus'),
  })
  .safeParse(process.env);
if (!env.success) {
  const issue = env.error.issues[0];
  console.error(`start: invalid environment: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'malformed'}`);
  process.exit(2);
}

const dataDir = join(env.data.NIMBUS_DATA_DIR, 'servicebus');
mkdirSync(dataDir, { recursive: true });

let emulator: Awaited<ReturnType<typeof startEmulator>>;
try {
  emulator = await startEmulator({ port: env.data.NIMBUS_EMULATOR_PORT, dataDir, logLevel: 'info' });
} catch (err) {
  console.error(`start: the Service Bus emulator did not start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
console.log(`Service Bus emulator ready on 127.0.0.1:${emulator.port} (data: ${dataDir})`);
console.log(`NIMBUS_SERVICEBUS_CONNECTION_STRING=${emulator.connectionString}`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    emulator.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
