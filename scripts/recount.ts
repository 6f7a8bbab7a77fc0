// Entry point of `npm run recount` and of the image's `recount` role (scripts/docker-role.sh): the recount the
// Resolver's warnings ask for (a counters recovery that gave up, a late instance's refused flushes: docs/deploy.md,
// "Recounting counters"). Recounts the endpoints named, or with `--all` every endpoint that has a counters document,
// readable or not (as recountAll), from their rows (store.recountEndpoint, which also rebuilds their failure
// groups). Reads the store settings as the Resolver does (NIMBUS_COSMOS_ENDPOINT / _KEY / _DATABASE), so an operator
// runs it with the Resolver's environment. Prints one line per endpoint with its counts before and after, never a
// row, a key or a service's own error text. Exit codes: 0 all recounted, 1 any failed (named; the others are still
// recounted) or the store unreachable, 2 usage, a bad endpoint id or a bad setting (nothing recounted).
import { ConfigError, readStoreConfig } from '../resolver-worker/config.ts';
import { logSafeError } from '../resolver-worker/liveness.ts';
import { createStore, endpointIdSchema, type EndpointCounts, type MessageStore } from '../lib/store/index.ts';

// The usage names the command as the operator ran it: the image's entry point (scripts/docker-role.sh) marks its
// recount role (`docker run <image> recount`); anywhere else, and in the image run as `npm run recount`, the npm form.
const COMMAND = process.env.NIMBUS_IMAGE_ROLE === 'recount' ? 'docker run --rm <image> recount' : 'npm run recount --';
const USAGE = `usage: ${COMMAND} <endpoint id>...   recount the endpoints named
       ${COMMAND} --all              recount every endpoint that has a counters document
Reads NIMBUS_COSMOS_ENDPOINT, NIMBUS_COSMOS_KEY and NIMBUS_COSMOS_DATABASE, as the Resolver does.`;

function fail(message: string, code: number): never {
  console.error(message);
  process.exit(code);
}

/** The endpoints asked for, or the usage problem. Ids are checked by the store's own rule before anything runs. */
function parseArgs(args: readonly string[]): { all: true } | { all: false; ids: string[] } {
  if (args.length === 0 || args.includes('--help') || args.includes('-h')) fail(USAGE, 2);
  const flags = args.filter((a) => a.startsWith('-'));
  const unknown = flags.filter((a) => a !== '--all');
  if (unknown.length > 0) fail(`recount: unknown option ${JSON.stringify(unknown[0])}\n${USAGE}`, 2);
  const names = args.filter((a) => !a.startsWith('-'));
  if (flags.length > 0) {
    if (names.length > 0) fail(`recount: give either --all or endpoint ids, not both\n${USAGE}`, 2);
    return { all: true };
  }
  // JSON.stringify: an id as typed may hold control characters; it is shown quoted and escaped, never raw.
  const bad = names.filter((n) => !endpointIdSchema.safeParse(n).success);
  if (bad.length > 0)
    fail(`recount: not an endpoint id: ${bad.map((b) => JSON.stringify(b)).join(', ')} (endpoint ids are 1-50 letters, digits, ".", "_" and "-"); nothing recounted`, 2);
  return { all: false, ids: [...new Set(names)] };
}

const COLUMNS = ['pending', 'deferred', 'failed', 'completed', 'skipped'] as const;

/** "pending 3→2, deferred 0→0, …": the console's columns; a document that was missing or unreadable says so. */
function describeChange(before: EndpointCounts | 'unreadable' | 'none', after: EndpointCounts): string {
  if (before === 'unreadable' || before === 'none') {
    const was = before === 'none' ? 'no counters document' : 'counters document unreadable';
    return `${was} → ${COLUMNS.map((c) => `${c} ${after[c]}`).join(', ')}`;
  }
  return COLUMNS.map((c) => `${c} ${before[c]}→${after[c]}`).join(', ');
}

/** No status row at all on the endpoint, readable or not (one row is enough to say there are some). */
async function hasNoRows(store: MessageStore, endpointId: string): Promise<boolean> {
  const page = await store.listEvents({ endpointId, pageSize: 1 });
  return page.items.length === 0 && page.corrupt.length === 0;
}

async function recount(store: MessageStore, request: ReturnType<typeof parseArgs>): Promise<number> {
  // Before: one read of the counters container, which also names the documents that no longer parse.
  const { endpoints, unreadable } = await store.getAllCounts();
  const before = new Map<string, EndpointCounts | 'unreadable'>([
    ...endpoints.map((e) => [e.endpointId, e] as const),
    ...unreadable.map((id) => [id, 'unreadable'] as const),
  ]);
  const ids = request.all ? [...before.keys()] : request.ids;
  if (ids.length === 0) {
    console.log('recount: no endpoint has a counters document; nothing to recount');
    return 0;
  }
  const failed: string[] = [];
  for (const endpointId of ids) {
    try {
      const was = before.get(endpointId) ?? 'none';
      // A name with neither a counters document nor rows is most likely mistyped: a recount would create an empty
      // document, an endpoint that does not exist in the console's overview.
      if (was === 'none' && (await hasNoRows(store, endpointId))) {
        console.log(`${endpointId}: FAILED: no counters document and no rows (check the id); nothing written`);
        failed.push(endpointId);
        continue;
      }
      const after = await store.recountEndpoint(endpointId);
      console.log(`${endpointId}: ${describeChange(was, after)}`);
    } catch (err) {
      console.log(`${endpointId}: FAILED: ${logSafeError(err)}`);
      failed.push(endpointId);
    }
  }
  const done = ids.length - failed.length;
  if (failed.length === 0) {
    console.log(`recount: ${done} endpoint${done === 1 ? '' : 's'} recounted`);
    return 0;
  }
  console.error(`recount: ${done} of ${ids.length} recounted; failed: ${failed.join(', ')} (run the recount of those again)`);
  return 1;
}

const request = parseArgs(process.argv.slice(2));
let config;
try {
  config = readStoreConfig(process.env, 'the recount');
} catch (err) {
  if (err instanceof ConfigError) fail(err.message, 2);
  throw err;
}
let store: MessageStore | undefined;
try {
  store = await createStore(config);
  process.exitCode = await recount(store, request);
} catch (err) {
  // The store unreachable or refusing: the message only, as the warnings log it (a service's text can name the
  // account; the key is never in an error).
  console.error(`recount: could not ${store ? 'read the counters' : 'open the store'}: ${logSafeError(err)}; nothing recounted`);
  process.exitCode = 1;
} finally {
  await store?.close().catch(() => undefined);
}
