// Rules through the real ServiceBusAdministrationClient.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { collect, rejectsWith, startAdminHarness, type AdminHarness } from './test-harness.ts';

describe('admin plane: rules', () => {
  let h: AdminHarness;
  before(async () => {
    h = await startAdminHarness();
    await h.admin.createTopic('E1');
  });
  after(async () => {
    await h.close();
  });

  test('a default rule with a parameterised SQL filter and a SQL action replaces $Default', async () => {
    await h.admin.createSubscription('E1', 'with-rule', {
      defaultRuleOptions: {
        name: 'ToE1',
        filter: {
          sqlExpression: 'user.To = @to AND user.Count > @n',
          sqlParameters: { '@to': 'E1', '@n': 2 },
        },
        action: { sqlExpression: "SET user.From = 'E1'" },
      },
    });
    const rules = await collect(h.admin.listRules('E1', 'with-rule'));
    assert.deepEqual(
      rules.map((r) => ({ name: r.name, filter: r.filter, action: r.action })),
      [
        {
          name: 'ToE1',
          filter: {
            sqlExpression: 'user.To = @to AND user.Count > @n',
            sqlParameters: { '@to': 'E1', '@n': 2 },
          },
          action: { sqlExpression: "SET user.From = 'E1'", sqlParameters: undefined },
        },
      ],
    );
    // The broker got typed parameters.
    const stored = h.broker.getRule('E1', 'with-rule', 'ToE1');
    assert.deepEqual(stored.filter, {
      kind: 'sql',
      sqlExpression: 'user.To = @to AND user.Count > @n',
      parameters: { '@to': 'E1', '@n': 2 },
    });
  });

  test('a correlation filter with application properties round-trips', async () => {
    await h.admin.createSubscription('E1', 'corr');
    await h.admin.createRule('E1', 'corr', 'c1', {
      correlationId: 'cid',
      messageId: 'mid',
      to: 'E1',
      replyTo: 'r',
      subject: 'EventRequest',
      sessionId: 'sess',
      replyToSessionId: 'rs',
      contentType: 'application/json',
      applicationProperties: { EventTypeId: 'OrderPlaced', Attempt: 3, Urgent: true, Ratio: 0.25 },
    });
    const rule = await h.admin.getRule('E1', 'corr', 'c1');
    assert.equal(rule.name, 'c1');
    assert.deepEqual(rule.filter, {
      correlationId: 'cid',
      messageId: 'mid',
      to: 'E1',
      replyTo: 'r',
      subject: 'EventRequest',
      sessionId: 'sess',
      replyToSessionId: 'rs',
      contentType: 'application/json',
      applicationProperties: { EventTypeId: 'OrderPlaced', Attempt: 3, Urgent: true, Ratio: 0.25 },
    });
    assert.equal(rule.action.sqlExpression, undefined);
  });

  test('true and false filters read back as 1=1 and 1=0', async () => {
    await h.admin.createSubscription('E1', 'tf');
    // The JS client writes a true filter as SqlFilter 1=1; a false filter can only come from the broker side.
    await h.admin.createRule('E1', 'tf', 'all', { sqlExpression: '1=1' });
    h.broker.createRule('E1', 'tf', { name: 'none', filter: { kind: 'false' } });
    const byName = new Map((await collect(h.admin.listRules('E1', 'tf'))).map((r) => [r.name, r.filter]));
    assert.deepEqual(byName.get('$Default'), { sqlExpression: '1=1', sqlParameters: undefined });
    assert.deepEqual(byName.get('all'), { sqlExpression: '1=1', sqlParameters: undefined });
    assert.deepEqual(byName.get('none'), { sqlExpression: '1=0', sqlParameters: undefined });
  });

  test('invalid SQL is rejected with a 400 that explains the problem, and no rule is created', async () => {
    await h.admin.createSubscription('E1', 'bad-sql');
    const filterMessage = await rejectsWith(
      h.admin.createRule('E1', 'bad-sql', 'broken', { sqlExpression: 'user.To = = 3' }),
      'ServiceError',
      400,
    );
    assert.match(filterMessage, /Unexpected token/);
    const actionMessage = await rejectsWith(
      h.admin.createRule('E1', 'bad-sql', 'broken', { sqlExpression: '1=1' }, { sqlExpression: 'SET' }),
      'ServiceError',
      400,
    );
    assert.match(actionMessage, /SET/);
    assert.equal(await h.admin.ruleExists('E1', 'bad-sql', 'broken'), false);
  });

  test('duplicate rules are 409, missing ones 404', async () => {
    await h.admin.createSubscription('E1', 'dups');
    await h.admin.createRule('E1', 'dups', 'r', { sqlExpression: "user.To = 'E1'" });
    await rejectsWith(
      h.admin.createRule('E1', 'dups', 'r', { sqlExpression: "user.To = 'E1'" }),
      'MessageEntityAlreadyExistsError',
      409,
    );
    await rejectsWith(h.admin.getRule('E1', 'dups', 'nope'), 'MessageEntityNotFoundError', 404);
    await rejectsWith(h.admin.deleteRule('E1', 'dups', 'nope'), 'MessageEntityNotFoundError', 404);
  });

  test('updateRule replaces filter and action; deleteRule and ruleExists', async () => {
    await h.admin.createSubscription('E1', 'upd');
    await h.admin.createRule(
      'E1',
      'upd',
      'r',
      { sqlExpression: "user.To = 'Retry'" },
      { sqlExpression: "SET user.To = 'E1'" },
    );
    const rule = await h.admin.getRule('E1', 'upd', 'r');
    rule.filter = { sqlExpression: "user.To = 'Continuation'" };
    rule.action = { sqlExpression: "SET user.From = 'Continuation'" };
    await h.admin.updateRule('E1', 'upd', rule);
    const again = await h.admin.getRule('E1', 'upd', 'r');
    assert.deepEqual(again.filter, { sqlExpression: "user.To = 'Continuation'", sqlParameters: undefined });
    assert.equal(again.action.sqlExpression, "SET user.From = 'Continuation'");

    assert.equal(await h.admin.ruleExists('E1', 'upd', 'r'), true);
    await h.admin.deleteRule('E1', 'upd', 'r');
    assert.equal(await h.admin.ruleExists('E1', 'upd', 'r'), false);
  });

  test('listRules pages with $skip/$top', async () => {
    await h.admin.createSubscription('E1', 'many');
    for (const n of ['r1', 'r2', 'r3']) await h.admin.createRule('E1', 'many', n, { sqlExpression: '1=1' });
    const pages: string[][] = [];
    for await (const page of h.admin.listRules('E1', 'many').byPage({ maxPageSize: 2 })) {
      pages.push(page.map((r) => r.name));
    }
    assert.deepEqual(pages.flat().sort(), ['$Default', 'r1', 'r2', 'r3']);
    assert.deepEqual(
      pages.map((p) => p.length),
      [2, 2],
    );
  });
});
