// The embedded Cosmos server (@vercel/cosmosdb-server 1.0.1) decides a conditional patch (`condition: 'FROM c WHERE
// …'`) by running it as a query over the whole container with `c.id = @id` added: a document of another partition
// with the same id could satisfy it. On `counters` every endpoint's document has the id `counts`, so the condition
// of recoverLostDeltas ("nobody has recovered this writer here meanwhile") could pass because of another endpoint's
// document. It also lower-cased the condition before running it, so a property name or a string with capitals in it
// never matched. Cosmos decides the condition on the addressed document (its partition key and id) alone, as
// written: this fix does the same, and leaves everything else (404, If-Match, the operations) to the server's own
// patch, which it then calls without the condition.
import { createRequire } from 'node:module';

interface PatchInput {
  id: string;
  partitionKey: unknown;
  ifMatch?: string;
  condition?: string;
  operations: unknown[];
}
interface PatchResult {
  statusCode: number;
  body: unknown;
}
interface Collection {
  document(id: string, partition: unknown): { read(): { _etag?: string } | null | undefined };
}
type PatchOperation = (collection: Collection, input: PatchInput) => PatchResult;

let installed = false;

/** Installs the fix into the server's patch handler (once per process; a no-op afterwards). */
export function installPatchConditionFix(): void {
  if (installed) return;
  installed = true;
  // Resolved from the server's own location, as embeddedQueries.ts does.
  const serverRequire = createRequire(createRequire(import.meta.url).resolve('@vercel/cosmosdb-server'));
  // The handler calls it through the module's exports (`(0, m.patchOperation)(…)`), so replacing it there reaches it.
  const patches = serverRequire('./handler/_patch-operations.js') as { patchOperation: PatchOperation };
  // Called at each patch, not kept: embeddedHierarchicalKeys.ts replaces it too.
  const header = serverRequire('./utils/get-partition-from-header.js') as {
    parsePartitionKey(partitionKey: unknown, defaultValue: unknown): unknown;
  };
  const compile = (serverRequire('@zeit/cosmosdb-query') as { default: (sql: string) => ConditionQuery }).default;
  // Parsed once per condition text: a buffering writer's every flush patch carries the same one (its recovered
  // fence, counters.ts), and parsing it each time cost more than the patch itself. Bounded: recoveries' conditions
  // name the window they read.
  const parsed = new Map<string, ConditionQuery>();
  const compiled = (condition: string): ConditionQuery => {
    let q = parsed.get(condition);
    if (!q) {
      if (parsed.size >= 256) parsed.clear();
      q = compile(conditionQuery(condition));
      parsed.set(condition, q);
    }
    return q;
  };
  const original = patches.patchOperation;
  patches.patchOperation = (collection, input) => {
    if (!input.condition) return original(collection, input);
    const data = collection.document(input.id, header.parsePartitionKey(input.partitionKey, input.id)).read();
    // Missing, or its version not the one required: the server's own answers (404, 412), as before.
    if (!data || (input.ifMatch && input.ifMatch !== data._etag)) return original(collection, input);
    let satisfied: boolean;
    try {
      satisfied = compiled(input.condition).exec([data], { parameters: [] }).result.length > 0;
    } catch {
      return { statusCode: 400, body: { code: 'BadRequest', message: 'Invalid condition in patch request.' } };
    }
    if (!satisfied)
      return { statusCode: 412, body: { code: 'PreconditionFailed', message: 'Condition specified in the patch request is not satisfied.' } };
    return original(collection, { ...input, condition: undefined });
  };
}

interface ConditionQuery {
  exec(documents: unknown[], options: { parameters: unknown[] }): { result: unknown[] };
}

/** The condition as a query of one document, its text unchanged: `FROM c WHERE …` (the SDK's form) or `WHERE …`. */
function conditionQuery(condition: string): string {
  const text = condition.trim();
  const lower = text.toLowerCase();
  if (lower.startsWith('select')) return text;
  if (lower.startsWith('where')) return `SELECT * FROM c ${text}`;
  return `SELECT * ${text}`;
}
