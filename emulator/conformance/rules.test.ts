// Rules: SQL filters, correlation filters, true/false filters and SQL actions on a topic with several
// subscriptions; invalid SQL rejected at creation; rules managed over AMQP ($management) too.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusMessage } from '@azure/service-bus';
import {
  type SubscriptionSpec,
  assertRestError,
  createTopicWithSubscriptions,
  idsOf,
  receiveAll,
  uniqueName,
  useHarness,
} from './helpers.ts';

const h = useHarness();

const messages: ServiceBusMessage[] = [
  {
    messageId: 'm1',
    body: 'm1',
    subject: 'hello',
    correlationId: 'c1',
    applicationProperties: { Amount: 150, Region: 'EU', Color: 'red', Name: 'abc', Flag: true, Code: 'a_1' },
  },
  {
    messageId: 'm2',
    body: 'm2',
    correlationId: 'c2',
    applicationProperties: {
      Amount: 50,
      Region: 'US',
      Color: 'blue',
      Name: 'xbc',
      Flag: false,
      Optional: 'here',
      Code: 'ab1',
    },
  },
  {
    messageId: 'm3',
    body: 'm3',
    applicationProperties: { Amount: 500, Region: 'APAC', Color: 'green', Name: 'ab', Code: 'a_' },
  },
  {
    messageId: 'm4',
    body: 'm4',
    subject: 'hello',
    correlationId: 'c1',
    applicationProperties: { Amount: 101, Region: 'EU', Color: 'red', Name: 'zz', Kind: 'k', Code: 'ax' },
  },
];

/** One subscription per filter, with the message ids it must receive. */
const filterCases: Array<{ sub: SubscriptionSpec; expect: string[] }> = [
  {
    sub: {
      name: 'and',
      rules: [{ name: 'r', filter: { sqlExpression: "user.Amount > 100 AND user.Region = 'EU'" } }],
    },
    expect: ['m1', 'm4'],
  },
  {
    sub: {
      name: 'or',
      rules: [{ name: 'r', filter: { sqlExpression: "user.Color = 'red' OR user.Color = 'blue'" } }],
    },
    expect: ['m1', 'm2', 'm4'],
  },
  {
    sub: { name: 'not', rules: [{ name: 'r', filter: { sqlExpression: "NOT (user.Color = 'red')" } }] },
    expect: ['m2', 'm3'],
  },
  {
    sub: {
      name: 'parens',
      rules: [
        {
          name: 'r',
          filter: { sqlExpression: "(user.Region = 'US' OR user.Color = 'green') AND user.Amount >= 50" },
        },
      ],
    },
    expect: ['m2', 'm3'],
  },
  {
    sub: {
      name: 'compare',
      rules: [{ name: 'r', filter: { sqlExpression: 'user.Amount <> 150 AND user.Amount <= 101' } }],
    },
    expect: ['m2', 'm4'],
  },
  {
    sub: { name: 'isnull', rules: [{ name: 'r', filter: { sqlExpression: 'user.Optional IS NULL' } }] },
    expect: ['m1', 'm3', 'm4'],
  },
  {
    sub: {
      name: 'isnotnull-unprefixed',
      rules: [{ name: 'r', filter: { sqlExpression: 'Optional IS NOT NULL' } }],
    },
    expect: ['m2'],
  },
  {
    sub: { name: 'in', rules: [{ name: 'r', filter: { sqlExpression: "user.Region IN ('EU', 'US')" } }] },
    expect: ['m1', 'm2', 'm4'],
  },
  {
    sub: {
      name: 'notin',
      rules: [{ name: 'r', filter: { sqlExpression: "user.Region NOT IN ('EU', 'US')" } }],
    },
    expect: ['m3'],
  },
  {
    sub: { name: 'like', rules: [{ name: 'r', filter: { sqlExpression: "user.Name LIKE 'ab%'" } }] },
    expect: ['m1', 'm3'],
  },
  {
    sub: {
      name: 'like-underscore',
      rules: [{ name: 'r', filter: { sqlExpression: "user.Name LIKE '_bc'" } }],
    },
    expect: ['m1', 'm2'],
  },
  {
    sub: {
      name: 'like-escape',
      rules: [{ name: 'r', filter: { sqlExpression: "user.Code LIKE 'a!_%' ESCAPE '!'" } }],
    },
    expect: ['m1', 'm3'],
  },
  {
    sub: { name: 'exists', rules: [{ name: 'r', filter: { sqlExpression: 'EXISTS(user.Kind)' } }] },
    expect: ['m4'],
  },
  {
    sub: { name: 'boolean', rules: [{ name: 'r', filter: { sqlExpression: 'user.Flag = true' } }] },
    expect: ['m1'],
  },
  {
    sub: { name: 'sys-label', rules: [{ name: 'r', filter: { sqlExpression: "sys.Label = 'hello'" } }] },
    expect: ['m1', 'm4'],
  },
  {
    sub: {
      name: 'sys-correlation',
      rules: [{ name: 'r', filter: { sqlExpression: "sys.CorrelationId = 'c2'" } }],
    },
    expect: ['m2'],
  },
  {
    sub: { name: 'sys-messageid', rules: [{ name: 'r', filter: { sqlExpression: "sys.MessageId = 'm3'" } }] },
    expect: ['m3'],
  },
  {
    sub: {
      name: 'parameters',
      rules: [
        {
          name: 'r',
          filter: {
            sqlExpression: 'user.Amount > @min AND user.Region = @region',
            sqlParameters: { '@min': 100, '@region': 'EU' },
          },
        },
      ],
    },
    expect: ['m1', 'm4'],
  },
  {
    sub: {
      name: 'correlation',
      rules: [
        {
          name: 'r',
          filter: { correlationId: 'c1', subject: 'hello', applicationProperties: { Kind: 'k' } },
        },
      ],
    },
    expect: ['m4'],
  },
  {
    sub: { name: 'correlation-id-only', rules: [{ name: 'r', filter: { correlationId: 'c1' } }] },
    expect: ['m1', 'm4'],
  },
  { sub: { name: 'true', rules: [{ name: 'r', filter: true }] }, expect: ['m1', 'm2', 'm3', 'm4'] },
  { sub: { name: 'false', rules: [{ name: 'r', filter: false }] }, expect: [] },
  { sub: { name: 'default' }, expect: ['m1', 'm2', 'm3', 'm4'] },
  {
    // A message matching several rules of one subscription is delivered to it once.
    sub: {
      name: 'several-rules',
      rules: [
        { name: 'green', filter: { sqlExpression: "user.Color = 'green'" } },
        { name: 'blue', filter: { sqlExpression: "user.Color = 'blue'" } },
        { name: 'fifty', filter: { sqlExpression: 'user.Amount = 50' } },
      ],
    },
    expect: ['m2', 'm3'],
  },
];

describe('rule filters', () => {
  test('each subscription of a topic receives exactly the messages its filters match', async () => {
    const topic = uniqueName('flt');
    await createTopicWithSubscriptions(
      h.admin,
      topic,
      filterCases.map((c) => c.sub),
    );
    const sender = h.client.createSender(topic);
    await sender.sendMessages(messages);
    await sender.close();
    const failures: string[] = [];
    await Promise.all(
      filterCases.map(async (c) => {
        const r = h.client.createReceiver(topic, c.sub.name, { receiveMode: 'receiveAndDelete' });
        try {
          const got = idsOf(await receiveAll(r, { expected: c.expect.length, timeoutMs: 5_000 }));
          if (JSON.stringify(got) !== JSON.stringify([...c.expect].sort())) {
            failures.push(`${c.sub.name}: expected [${c.expect.join(',')}], got [${got.join(',')}]`);
          }
        } finally {
          await r.close();
        }
      }),
    );
    assert.deepEqual(failures, []);
  });

  test('getSubscriptionRuntimeProperties counts only the matched copies', async () => {
    const topic = uniqueName('flt');
    await createTopicWithSubscriptions(h.admin, topic, [
      { name: 'eu', rules: [{ name: 'r', filter: { sqlExpression: "user.Region = 'EU'" } }] },
      { name: 'none', rules: [{ name: 'r', filter: false }] },
    ]);
    const sender = h.client.createSender(topic);
    await sender.sendMessages(messages);
    await sender.close();
    assert.equal((await h.admin.getSubscriptionRuntimeProperties(topic, 'eu')).activeMessageCount, 2);
    assert.equal((await h.admin.getSubscriptionRuntimeProperties(topic, 'none')).activeMessageCount, 0);
  });
});

describe('rule actions', () => {
  test("SET, REMOVE, newid() and parameters change only that subscription's copy", async () => {
    const topic = uniqueName('act');
    await createTopicWithSubscriptions(h.admin, topic, [
      {
        name: 'stamp',
        rules: [
          {
            name: 'r',
            filter: true,
            action: {
              sqlExpression:
                "SET user.Stamp = 'stamped'; SET user.Copy = user.Region; REMOVE user.Color; SET sys.Label = 'relabelled'",
            },
          },
        ],
      },
      {
        name: 'newid',
        rules: [{ name: 'r', filter: true, action: { sqlExpression: 'SET user.NewId = newid()' } }],
      },
      {
        name: 'param',
        rules: [
          {
            name: 'r',
            filter: true,
            action: { sqlExpression: 'SET user.P = @p', sqlParameters: { '@p': 'from-parameter' } },
          },
        ],
      },
      {
        // Each rule's action applies only when that rule's filter matched.
        name: 'per-rule',
        rules: [
          {
            name: 'eu',
            filter: { sqlExpression: "user.Region = 'EU'" },
            action: { sqlExpression: "SET user.Matched = 'eu'" },
          },
          {
            name: 'us',
            filter: { sqlExpression: "user.Region = 'US'" },
            action: { sqlExpression: "SET user.Matched = 'us'" },
          },
        ],
      },
      { name: 'plain' },
    ]);
    const sender = h.client.createSender(topic);
    await sender.sendMessages(messages.slice(0, 2));
    await sender.close();

    const read = async (sub: string) => {
      const r = h.client.createReceiver(topic, sub, { receiveMode: 'receiveAndDelete' });
      try {
        const got = await receiveAll(r, { expected: 2, timeoutMs: 5_000 });
        return new Map(got.map((m) => [String(m.messageId), m]));
      } finally {
        await r.close();
      }
    };
    const [stamp, newid, param, perRule, plain] = await Promise.all(
      ['stamp', 'newid', 'param', 'per-rule', 'plain'].map(read),
    );

    const s1 = stamp!.get('m1');
    assert.ok(s1, 'stamp got m1');
    assert.equal(s1.applicationProperties?.Stamp, 'stamped');
    assert.equal(s1.applicationProperties?.Copy, 'EU');
    assert.equal(s1.applicationProperties?.Color, undefined, 'REMOVE removed Color');
    assert.equal(s1.subject, 'relabelled');
    assert.equal(s1.applicationProperties?.Amount, 150, 'other properties untouched');
    assert.equal(s1.body, 'm1', 'body untouched');

    const ids = ['m1', 'm2'].map((id) => String(newid!.get(id)?.applicationProperties?.NewId));
    for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
    assert.notEqual(ids[0], ids[1], 'newid() differs per message');

    assert.equal(param!.get('m1')?.applicationProperties?.P, 'from-parameter');

    assert.equal(perRule!.get('m1')?.applicationProperties?.Matched, 'eu');
    assert.equal(perRule!.get('m2')?.applicationProperties?.Matched, 'us');

    const p1 = plain!.get('m1');
    assert.ok(p1, 'plain got m1');
    assert.equal(p1.applicationProperties?.Stamp, undefined, "another subscription's action did not leak");
    assert.equal(p1.applicationProperties?.Color, 'red');
    assert.equal(p1.applicationProperties?.NewId, undefined);
    assert.equal(p1.subject, 'hello');
  });
});

describe('rule validation and management', () => {
  test('invalid SQL filters and actions are rejected at rule creation with HTTP 400', async () => {
    const topic = uniqueName('bad');
    await createTopicWithSubscriptions(h.admin, topic, [{ name: 'sub' }]);
    const badFilters = [
      'user.X = = 1',
      'user.Name LIKE',
      'user.Amount >',
      "user.Region IN ('EU'",
      'SELECT * FROM t',
      "user.A = 'unterminated",
    ];
    for (const [i, sql] of badFilters.entries()) {
      await assertRestError(
        () => h.admin.createRule(topic, 'sub', `bad-filter-${i}`, { sqlExpression: sql }),
        400,
      );
    }
    const badActions = ['SET = 1', 'SET user.A', 'DELETE user.A'];
    for (const [i, sql] of badActions.entries()) {
      await assertRestError(
        () =>
          h.admin.createRule(
            topic,
            'sub',
            `bad-action-${i}`,
            { sqlExpression: '1=1' },
            { sqlExpression: sql },
          ),
        400,
      );
    }
    // Nothing half-created: only $Default remains.
    const names: string[] = [];
    for await (const r of h.admin.listRules(topic, 'sub')) names.push(r.name);
    assert.deepEqual(names, ['$Default']);
  });

  test('a subscription whose default rule has invalid SQL is not created', async () => {
    const topic = uniqueName('bad');
    await h.admin.createTopic(topic);
    await assertRestError(
      () =>
        h.admin.createSubscription(topic, 'sub', {
          defaultRuleOptions: { name: 'r', filter: { sqlExpression: 'user.X = = 1' } },
        }),
      400,
    );
    assert.equal(await h.admin.subscriptionExists(topic, 'sub'), false);
  });

  test('rules can be added, listed and removed over AMQP with the rule manager', async () => {
    const topic = uniqueName('rm');
    await createTopicWithSubscriptions(h.admin, topic, [{ name: 'sub' }]);
    const rm = h.client.createRuleManager(topic, 'sub');
    await rm.createRule(
      'eu',
      { sqlExpression: "user.Region = 'EU'" },
      { sqlExpression: "SET user.Via = 'rule-manager'" },
    );
    await rm.createRule('corr', { correlationId: 'c2' });
    await rm.deleteRule('$Default');
    const listed: string[] = [];
    for await (const r of rm.listRules()) listed.push(r.name);
    assert.deepEqual(listed.sort(), ['corr', 'eu']);

    const sender = h.client.createSender(topic);
    await sender.sendMessages(messages);
    await sender.close();
    const r = h.client.createReceiver(topic, 'sub', { receiveMode: 'receiveAndDelete' });
    const got = await receiveAll(r, { expected: 3 });
    await r.close();
    assert.deepEqual(idsOf(got), ['m1', 'm2', 'm4']);
    assert.equal(got.find((m) => m.messageId === 'm1')?.applicationProperties?.Via, 'rule-manager');
    assert.equal(got.find((m) => m.messageId === 'm2')?.applicationProperties?.Via, undefined);

    await assert.rejects(() => rm.createRule('broken', { sqlExpression: 'user.X = = 1' }));
  });
});
