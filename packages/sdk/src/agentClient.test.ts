// What the AgentClient refuses before sending anything (a fetch that counts the requests stands in for the
// console; nothing here needs one). The client against the console's real routes: packages/sdk/e2e/agentApi.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentClient, type AgentSettleInput } from './agentClient.ts';
import { HandoffClientError } from './handoffClient.ts';

test('settle refuses a failed outcome with a note before any request: the console would refuse it with 400', async () => {
  let requests = 0;
  const client = new AgentClient({
    consoleUrl: 'http://127.0.0.1:1',
    fetch: async () => {
      requests++;
      return new Response(null, { status: 503 });
    },
    retry: { attempts: 1 },
  });
  const where = { endpointId: 'erpendpoint', eventId: 'e-1', messageId: 'm-1' };
  // A JavaScript caller's shape: the TypeScript type has no note on a failure.
  const noted = { ...where, outcome: 'failed', errorText: 'period closed', note: 'will retry tomorrow' } as unknown as AgentSettleInput;
  const err = await client.settle(noted).then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof HandoffClientError, String(err));
  assert.match(err.message, /note belongs to a completed outcome/);
  await assert.rejects(client.settle({ ...where, outcome: 'failed', errorText: '  ' }), /errorText is required/);
  assert.equal(requests, 0);
});
