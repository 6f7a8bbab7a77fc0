// Entry point of `npm run provision`; see packages/sdk/src/topology/cli.ts.
import { runProvisionCli } from '@nimbus/sdk/topology';

const { exitCode } = await runProvisionCli(process.argv.slice(2));
process.exitCode = exitCode;
