// `npm run provision -- --catalog FILE [--dry-run]`: reads the catalog, derives the topology and provisions it on
// the Service Bus namespace named by NIMBUS_SERVICEBUS_CONNECTION_STRING, then prints the rights model (which
// identity needs which right on which entity, rights.ts). `--rights` prints only the rights model, needs no
// namespace, and with `--format json|az|sas` gives it as data, as `az role assignment` commands or as shared access
// policies. Kept apart from
// scripts/provision.ts so tests can run it in-process. Never prints the connection string.
import { parseArgs } from 'node:util';
import { CatalogError, loadCatalog } from '../contract/catalog.ts';
import { createServiceBusClients } from '../servicebus/index.ts';
import { deriveTopology } from './derive.ts';
import { TopologyError } from './names.ts';
import { changeCount, formatReport, provisionTopology, ProvisioningError, type ProvisionReport } from './provision.ts';
import { azRoleAssignments, azSasPolicies, deriveRights, formatRights, type RightsModel } from './rights.ts';

export const DEFAULT_CATALOG = 'catalog/demo.json';
export const CONNECTION_STRING_VARIABLE = 'NIMBUS_SERVICEBUS_CONNECTION_STRING';

const USAGE = `usage: npm run provision -- [--catalog FILE] [--dry-run] [--rights [--format text|json|az|sas]]
  --catalog FILE  the catalog to provision (default: $NIMBUS_CATALOG, else ${DEFAULT_CATALOG})
  --dry-run       print what would change without changing anything
  --rights        print only which identity needs which right on which entity (no namespace needed)
  --format F      with --rights: text (default), json, az (Azure RBAC role assignments) or sas (shared access policies)
  The namespace is read from ${CONNECTION_STRING_VARIABLE}, or from NIMBUS_SERVICEBUS_NAMESPACE (signing in
  with DefaultAzureCredential). Provisioning prints the rights model at the end.`;

const FORMATS = ['text', 'json', 'az', 'sas'] as const;
type RightsFormat = (typeof FORMATS)[number];

function rightsLines(rights: RightsModel, format: RightsFormat): string[] {
  if (format === 'json') return [JSON.stringify(rights, null, 2)];
  if (format === 'az') return azRoleAssignments(rights);
  if (format === 'sas') return azSasPolicies(rights);
  return formatRights(rights);
}

export interface CliOutput {
  log(line: string): void;
  error(line: string): void;
}

export interface CliResult {
  exitCode: number;
  report?: ProvisionReport;
  rights?: RightsModel;
}

export async function runProvisionCli(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  out: CliOutput = { log: (l) => console.log(l), error: (l) => console.error(l) },
): Promise<CliResult> {
  let values: { catalog?: string; 'dry-run'?: boolean; rights?: boolean; format?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        catalog: { type: 'string' },
        'dry-run': { type: 'boolean' },
        rights: { type: 'boolean' },
        format: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
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
  const format = values.format ?? 'text';
  if (!(FORMATS as readonly string[]).includes(format) || (values.format !== undefined && !values.rights)) {
    out.error(`provision: --format takes ${FORMATS.join(', ')} and goes with --rights\n${USAGE}`);
    return { exitCode: 2 };
  }
  const catalogPath = values.catalog ?? env.NIMBUS_CATALOG ?? DEFAULT_CATALOG;

  if (values.rights) {
    try {
      const rights = deriveRights(deriveTopology(await loadCatalog(catalogPath)));
      for (const line of rightsLines(rights, format as RightsFormat)) out.log(line);
      return { exitCode: 0, rights };
    } catch (error) {
      if (error instanceof CatalogError || error instanceof TopologyError) {
        out.error(`provision: ${error.message}`);
        return { exitCode: 1 };
      }
      throw error;
    }
  }

  // A connection string (SAS), or NIMBUS_SERVICEBUS_NAMESPACE with Microsoft Entra identity (Data Owner on the namespace).
  const namespace = env.NIMBUS_SERVICEBUS_NAMESPACE?.trim();
  const connectionString = env[CONNECTION_STRING_VARIABLE]?.trim();
  if (namespace && connectionString) {
    out.error(`provision: ${CONNECTION_STRING_VARIABLE} and NIMBUS_SERVICEBUS_NAMESPACE are both set; set one`);
    return { exitCode: 2 };
  }
  if (!connectionString && !namespace) {
    out.error(
      `provision: ${CONNECTION_STRING_VARIABLE} is not set. Set it to the Service Bus (or emulator) connection string, ` +
        `e.g. the one \`npm start\` or \`npm run emulator\` prints.`,
    );
    return { exitCode: 2 };
  }

  const dryRun = values['dry-run'] === true;
  let clients: ReturnType<typeof createServiceBusClients> | undefined;
  try {
    const catalog = await loadCatalog(catalogPath);
    const model = deriveTopology(catalog);
    clients = createServiceBusClients(namespace ? { fullyQualifiedNamespace: namespace } : connectionString!);
    out.log(`provision: ${dryRun ? 'planning' : 'provisioning'} ${model.topics.length} topics from ${catalogPath} on ${clients.info.hostname}`);
    const report = await provisionTopology(clients.admin, model, { dryRun });
    for (const line of formatReport(report)) out.log(`  ${dryRun ? 'would be ' : ''}${line}`);
    out.log(
      `provision: ${report.created.length} created, ${report.changed.length} changed, ${report.removed.length} removed` +
        (changeCount(report) === 0 ? ' (already up to date)' : '') +
        (dryRun ? ' (dry run: nothing was changed)' : ''),
    );
    const rights = deriveRights(model);
    out.log('');
    for (const line of formatRights(rights)) out.log(line);
    return { exitCode: 0, report, rights };
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
