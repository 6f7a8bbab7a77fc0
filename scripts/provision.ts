// Entry point of `npm run provision`; see lib/topology/cli.ts.
import { runProvisionCli } from '../lib/topology/cli.ts';

const { exitCode } = await runProvisionCli(process.argv.slice(2));
process.exitCode = exitCode;
