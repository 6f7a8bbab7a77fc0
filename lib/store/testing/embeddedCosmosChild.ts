// A durable embedded Cosmos server in a process of its own, for tests that kill it (kill -9) and start again on
// the same data folder. Usage: node --import tsx embeddedCosmosChild.ts DATA_DIR; prints `listening URL`.
import { startEmbeddedCosmos } from '../cosmos.ts';

const dir = process.argv[2];
if (!dir) {
  process.stderr.write('usage: embeddedCosmosChild.ts DATA_DIR\n');
  process.exit(2);
}
const cosmos = await startEmbeddedCosmos({ port: 0, dataDir: dir });
process.stdout.write(`listening ${cosmos.endpoint}\n`);
// Stops by itself if the test that started it is gone.
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
setTimeout(() => process.exit(0), 120_000).unref();
