// Unit tests of the ATOM codec: what the reader takes from request bodies (shaped like the admin client's and
// like .NET's, whose prefixes differ) and what the writer produces.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { XMLParser } from 'fast-xml-parser';
import { MAX_DURATION_MS } from '../broker/api.ts';
import {
  AtomFormatError,
  readEntry,
  readRuleDescription,
  readSubscriptionDescription,
  readTopicDescription,
} from './atom-read.ts';
import { errorDocument, ruleEntry, subscriptionEntry, topicEntry, xmlDocument } from './atom-write.ts';
import { escapeXml } from './xml-writer.ts';

const wrap = (inner: string): string =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><entry xmlns="http://www.w3.org/2005/Atom"><updated>2026-01-01T00:00:00Z</updated><content type="application/xml">${inner}</content></entry>`;

const SB =
  'xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"';

describe('reading request entries', () => {
  test('a topic description with durations, numbers, booleans and status', () => {
    const { root, body } = readEntry(
      wrap(
        `<TopicDescription ${SB}><DefaultMessageTimeToLive>PT1H</DefaultMessageTimeToLive><MaxSizeInMegabytes>2048</MaxSizeInMegabytes><RequiresDuplicateDetection>true</RequiresDuplicateDetection><Status>SendDisabled</Status><UserMetadata>a &amp; b</UserMetadata></TopicDescription>`,
      ),
    );
    assert.equal(root, 'TopicDescription');
    assert.deepEqual(readTopicDescription(body), {
      defaultMessageTimeToLiveMs: 3_600_000,
      maxSizeInMegabytes: 2048,
      requiresDuplicateDetection: true,
      status: 'SendDisabled',
      userMetadata: 'a & b',
    });
  });

  test('an empty description means all defaults', () => {
    const { body } = readEntry(wrap(`<TopicDescription ${SB}/>`));
    assert.deepEqual(readTopicDescription(body), {});
  });

  test('a bad field is named in the error', () => {
    const { body } = readEntry(
      wrap(`<TopicDescription ${SB}><MaxSizeInMegabytes>lots</MaxSizeInMegabytes></TopicDescription>`),
    );
    assert.throws(() => readTopicDescription(body), /MaxSizeInMegabytes: must be a whole number/);
    const bad = readEntry(
      wrap(
        `<TopicDescription ${SB}><DefaultMessageTimeToLive>1 hour</DefaultMessageTimeToLive></TopicDescription>`,
      ),
    );
    assert.throws(
      () => readTopicDescription(bad.body),
      /DefaultMessageTimeToLive: '1 hour' is not an ISO 8601 duration/,
    );
    const status = readEntry(wrap(`<TopicDescription ${SB}><Status>Paused</Status></TopicDescription>`));
    assert.throws(() => readTopicDescription(status.body), /Status: must be Active/);
  });

  test('malformed XML, a DOCTYPE and a missing <content> are rejected', () => {
    assert.throws(
      () => readEntry('<entry><content>'),
      (e: unknown) => e instanceof AtomFormatError && /well-formed/.test(e.message),
    );
    assert.throws(() => readEntry('<!DOCTYPE x [<!ENTITY a "b">]><entry/>'), /DOCTYPE/);
    assert.throws(() => readEntry('<entry><title>x</title></entry>'), /<content>/);
    assert.throws(() => readEntry(''), /empty/);
  });

  test('a subscription with ForwardTo as an sb:// address and a default SQL rule with parameters and an action', () => {
    const xml = wrap(
      `<SubscriptionDescription ${SB}><LockDuration>PT5S</LockDuration><RequiresSession>true</RequiresSession><DefaultRuleDescription><Filter p4:type="SqlFilter" xmlns:p4="http://www.w3.org/2001/XMLSchema-instance"><SqlExpression>user.To = @to AND user.N &gt; @n</SqlExpression><Parameters><KeyValueOfstringanyType><Key>@to</Key><Value p4:type="l28:string" xmlns:l28="http://www.w3.org/2001/XMLSchema">E</Value></KeyValueOfstringanyType><KeyValueOfstringanyType><Key>@n</Key><Value p4:type="l28:double" xmlns:l28="http://www.w3.org/2001/XMLSchema">1.5</Value></KeyValueOfstringanyType><KeyValueOfstringanyType><Key>@d</Key><Value p4:type="l28:dateTime" xmlns:l28="http://www.w3.org/2001/XMLSchema">1970-01-01T00:00:00.000Z</Value></KeyValueOfstringanyType></Parameters></Filter><Action p4:type="SqlRuleAction" xmlns:p4="http://www.w3.org/2001/XMLSchema-instance"><SqlExpression>SET user.From = 'E'</SqlExpression></Action><Name>r1</Name></DefaultRuleDescription><MaxDeliveryCount>3</MaxDeliveryCount><ForwardTo>sb://127.0.0.1:5672/Resolver</ForwardTo></SubscriptionDescription>`,
    );
    const { root, body } = readEntry(xml);
    assert.equal(root, 'SubscriptionDescription');
    const { description, defaultRule } = readSubscriptionDescription(body);
    assert.deepEqual(description, {
      lockDurationMs: 5_000,
      requiresSession: true,
      maxDeliveryCount: 3,
      forwardTo: 'Resolver',
    });
    assert.deepEqual(defaultRule, {
      name: 'r1',
      filter: {
        kind: 'sql',
        sqlExpression: 'user.To = @to AND user.N > @n',
        parameters: { '@to': 'E', '@n': 1.5, '@d': new Date(0) },
      },
      action: { sqlExpression: "SET user.From = 'E'" },
    });
  });

  test('a correlation filter with application properties and an empty action (.NET-style prefixes)', () => {
    const { body } = readEntry(
      wrap(
        `<RuleDescription ${SB}><Filter i:type="CorrelationFilter"><CorrelationId> c1</CorrelationId><Label>L</Label><Properties><KeyValueOfstringanyType><Key>k</Key><Value i:type="d2p1:boolean" xmlns:d2p1="http://www.w3.org/2001/XMLSchema">true</Value></KeyValueOfstringanyType></Properties></Filter><Action i:type="EmptyRuleAction"/><Name>c</Name></RuleDescription>`,
      ),
    );
    assert.deepEqual(readRuleDescription(body), {
      name: 'c',
      filter: { kind: 'correlation', correlationId: ' c1', subject: 'L', applicationProperties: { k: true } },
    });
  });

  test('true and false filters, and a missing filter meaning true', () => {
    const t = readEntry(
      wrap(
        `<RuleDescription ${SB}><Filter i:type="TrueFilter"><SqlExpression>1=1</SqlExpression></Filter></RuleDescription>`,
      ),
    );
    assert.deepEqual(readRuleDescription(t.body).filter, { kind: 'true' });
    const f = readEntry(wrap(`<RuleDescription ${SB}><Filter i:type="FalseFilter"/></RuleDescription>`));
    assert.deepEqual(readRuleDescription(f.body).filter, { kind: 'false' });
    const none = readEntry(wrap(`<RuleDescription ${SB}><Name>x</Name></RuleDescription>`));
    assert.deepEqual(readRuleDescription(none.body).filter, { kind: 'true' });
  });

  test('unsupported filter kinds and parameter types are rejected with a reason', () => {
    const f = readEntry(wrap(`<RuleDescription ${SB}><Filter i:type="MagicFilter"/></RuleDescription>`));
    assert.throws(() => readRuleDescription(f.body), /Unsupported filter type 'MagicFilter'/);
    const p = readEntry(
      wrap(
        `<RuleDescription ${SB}><Filter i:type="SqlFilter"><SqlExpression>1=1</SqlExpression><Parameters><KeyValueOfstringanyType><Key>@x</Key><Value i:type="d:base64Binary">AA==</Value></KeyValueOfstringanyType></Parameters></Filter></RuleDescription>`,
      ),
    );
    assert.throws(() => readRuleDescription(p.body), /type 'base64Binary' are not supported/);
    const empty = readEntry(
      wrap(
        `<RuleDescription ${SB}><Filter i:type="SqlFilter"><SqlExpression> </SqlExpression></Filter></RuleDescription>`,
      ),
    );
    assert.throws(() => readRuleDescription(empty.body), /SqlExpression is required/);
  });
});

// The writer is checked by reading its output back the way the admin client's parser sees it
// (attributes under "$", text under "_", prefixes kept).
const clientView = new XMLParser({
  ignoreAttributes: false,
  attributesGroupName: '$',
  attributeNamePrefix: '',
  textNodeName: '_',
  parseTagValue: false,
  trimValues: false,
});

const times = { createdAt: 0, updatedAt: 1_000, accessedAt: 2_000 };
const ctx = { host: '127.0.0.1:5672' };

describe('writing entries', () => {
  test('a topic entry carries its id URL, durations and count details with one xmlns prefix', () => {
    const xml = xmlDocument(
      topicEntry(
        ctx,
        {
          name: 'orders',
          status: 'Active',
          defaultMessageTimeToLiveMs: MAX_DURATION_MS,
          maxSizeInMegabytes: 1024,
          maxMessageSizeInKilobytes: 256,
          requiresDuplicateDetection: false,
          duplicateDetectionHistoryTimeWindowMs: 600_000,
          enableBatchedOperations: true,
          supportOrdering: true,
          enablePartitioning: false,
          autoDeleteOnIdleMs: MAX_DURATION_MS,
          ...times,
        },
        { name: 'orders', sizeInBytes: 10, subscriptionCount: 2, scheduledMessageCount: 1, ...times },
      ),
    );
    const entry = clientView.parse(xml).entry;
    assert.equal(entry.id, 'https://127.0.0.1:5672/orders?api-version=2021-05');
    const d = entry.content.TopicDescription;
    assert.equal(d.DefaultMessageTimeToLive, 'P10675199DT2H48M5.4775807S');
    assert.equal(d.DuplicateDetectionHistoryTimeWindow, 'PT10M');
    assert.equal(d.SubscriptionCount, '2');
    assert.equal(d.UpdatedAt, '1970-01-01T00:00:01.000Z');
    assert.deepEqual(Object.keys(d.CountDetails.$), ['xmlns:d2p1']);
    assert.equal(d.CountDetails['d2p1:ScheduledMessageCount'], '1');
    assert.equal(d.UserMetadata, undefined);
  });

  test('a subscription entry answers ForwardTo with the absolute address and reports counts', () => {
    const xml = xmlDocument(
      subscriptionEntry(
        ctx,
        {
          topicName: 'E1',
          subscriptionName: 'Resolver',
          status: 'Active',
          lockDurationMs: 30_000,
          requiresSession: false,
          defaultMessageTimeToLiveMs: 60_000,
          deadLetteringOnMessageExpiration: true,
          deadLetteringOnFilterEvaluationExceptions: true,
          maxDeliveryCount: 10,
          enableBatchedOperations: true,
          forwardTo: 'Resolver',
          autoDeleteOnIdleMs: MAX_DURATION_MS,
          ...times,
        },
        {
          topicName: 'E1',
          subscriptionName: 'Resolver',
          activeMessageCount: 3,
          deadLetterMessageCount: 2,
          scheduledMessageCount: 0,
          transferMessageCount: 0,
          transferDeadLetterMessageCount: 0,
          totalMessageCount: 5,
          ...times,
        },
      ),
    );
    const entry = clientView.parse(xml).entry;
    assert.equal(entry.id, 'https://127.0.0.1:5672/E1/Subscriptions/Resolver?api-version=2021-05');
    const d = entry.content.SubscriptionDescription;
    assert.equal(d.ForwardTo, 'sb://127.0.0.1:5672/Resolver');
    assert.equal(d.LockDuration, 'PT30S');
    assert.equal(d.MessageCount, '5');
    assert.equal(d.CountDetails['d2p1:DeadLetterMessageCount'], '2');
  });

  test('rule entries write filter types and typed parameters the client can read back', () => {
    const xml = xmlDocument(
      ruleEntry(ctx, 'E1', 's', {
        name: 'r<1>',
        filter: {
          kind: 'sql',
          sqlExpression: "user.To = @to AND user.X <> 'a&b'",
          parameters: { '@to': 'E', '@n': 2, '@f': 1.5 },
        },
        action: { sqlExpression: "SET user.From = 'E'" },
        createdAt: 0,
      }),
    );
    const d = clientView.parse(xml).entry.content.RuleDescription;
    assert.equal(d.Filter.$['i:type'], 'SqlFilter');
    assert.equal(d.Filter.SqlExpression, "user.To = @to AND user.X <> 'a&b'");
    const kv = d.Filter.Parameters.KeyValueOfstringanyType;
    assert.deepEqual(
      kv.map((p: { Key: string; Value: { _: string; $: Record<string, string> } }) => [
        p.Key,
        p.Value._,
        p.Value.$['i:type'],
      ]),
      [
        ['@to', 'E', 'd6p1:string'],
        ['@n', '2', 'd6p1:int'],
        ['@f', '1.5', 'd6p1:double'],
      ],
    );
    assert.equal(d.Action.$['i:type'], 'SqlRuleAction');
    assert.equal(d.Name, 'r<1>');

    const tf = clientView.parse(
      xmlDocument(ruleEntry(ctx, 'E1', 's', { name: 't', filter: { kind: 'true' }, createdAt: 0 })),
    );
    const td = tf.entry.content.RuleDescription;
    assert.equal(td.Filter.$['i:type'], 'TrueFilter');
    assert.equal(td.Filter.SqlExpression, '1=1');
    assert.equal(td.Action.$['i:type'], 'EmptyRuleAction');
  });

  test('error documents carry the detail the client shows', () => {
    const doc = clientView.parse(errorDocument(404, "Topic 'x' <missing>"));
    assert.deepEqual(doc.Error, { Code: '404', Detail: "Topic 'x' <missing>" });
  });

  test('escaping covers markup characters and replaces characters XML cannot carry', () => {
    assert.equal(escapeXml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;');
    assert.equal(escapeXml('a\u0001b\uD800c'), 'a\uFFFDb\uFFFDc');
    assert.equal(escapeXml('tab\tnew\nline \u{1F600}'), 'tab\tnew\nline \u{1F600}');
  });
});
