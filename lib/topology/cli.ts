// `npm run provision -- --catalog FILE [--dry-run]`: reads the catalog, derives the topology and provisions it on
// the Service Bus namespace named by NIMBUS_SERVICEBUS_CONNECTION_STRING. Kept apart from scripts/provision.ts so
// tests can run it in-process. Never prints the connection string.
import { parseArgs } from 'node:util';
import { CatalogError, loadCatalog } from '../contract/catalog.ts';
import { createServiceBusClients } from '../servicebus/index.ts';
import { deriveTopology } from './derive.ts';
import { TopologyError } from './names.ts';
import { changeCount, formatReport, provisionTopology, ProvisioningError, type ProvisionReport } from './provision.ts';

export const DEFAULT_CATALOG = 'catalog/demo.json';
export const CONNECTION_STRING_VARIABLE = 'NIMBUS_SERVICEBUS_CONNECTION_STRING';

const USAGE = `usage: npm run provision -- [--catalog FILE] [--dry-run]
  --catalog FILE  the catalog to provision (default: $NIMBUS_CATALOG, else ${DEFAULT_CATALOG})
  --dry-run       print what would change without changing anything
  The namespace is read from ${CONNECTION_STRING_VARIABLE}.`;

export interface CliOutput {
  log(line: string): void;
  error(line: string): void;
}

export interface CliResult {
  exitCode: number;
  report?: ProvisionReport;
}

export async function runProvisionCli(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  out: CliOutput = { log: (l) => console.log(l), error: (l) => console.error(l) },
): Promise<CliResult> {
  let values: { catalog?: string; 'dry-run'?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { catalog: { type: 'string' }, 'dry-run': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }));
  } catch (error) {
    out.error(`provision: ${(error as Error).message}\n${USAGE}`);
    return { exitCode: 2 };
  }
  if (values.help) {
    out.log(USAGE);
    return { exitCode: 0 };
  }

  const connectionString = env[CONNECTION_STRING_VARIABLE]?.trim();
  if (!connectionString) {
    out.error(
      `provision: ${CONNECTION_STRING_VARIABLE} is not set. Set it to the Service Bus (or emulator) connection string, ` +
        `e.g. the one \`npm start\` or \`npm run emulator\` prints.`,
    );
    return { exitCode: 2 };
  }

  const catalogPath = values.catalog ?? env.NIMBUS_CATALOG ?? DEFAULT_CATALOG;
  const dryRun = values['dry-run'] === true;
  let clients: ReturnType<typeof createServiceBusClients> | undefined;
  try {
    const catalog = await loadCatalog(catalogPath);
    const model = deriveTopology(catalog);
    clients = createServiceBusClients(connectionString);
    out.log(`provision: ${dryRun ? 'planning' : 'provisioning'} ${model.topics.length} topics from ${catalogPath} on ${clients.info.hostname}`);
    const report = await provisionTopology(clients.admin, model, { dryRun });
    for (const line of formatReport(report)) out.log(`  ${dryRun ? 'would be ' : ''}${line}`);
    out.log(
      `provision: ${report.created.length} created, ${report.changed.length} changed, ${report.removed.length} removed` +
        (changeCount(report) === 0 ? ' (already up to date)' : '') +
        (dryRun ? ' (dry run: nothing was changed)' : ''),
    );
    return { exitCode: 0, report };
  } catch (error) {
    if (error instanceof CatalogError || error instanceof TopologyError || error instanceof ProvisioningError) {
      out.error(`provision: ${error.message}`);
      return { exitCode: 1 };
    }
    // Connection-string problems and anything unexpected: the message only, never the input that caused it.
    out.error(`provision: ${(error as Error).name}: ${(error as Error).message}`);
    return { exitCode: 1 };
  } finally {
    await clients?.close();
  }
}
