// A channel URL stored before https was required (plain http to another machine) is refused when a notice is sent,
// with a reason that says what to do and does not quote the URL; plain http to this machine still sends. A stored
// value that is no http URL at all is refused too, without being called plain http.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { noticeOf, sendNotice } from './channels.ts';
import type { AlertDoc, ChannelDoc } from './model.ts';
import { ALERTS_KEY_ENV, alertsKey, seal } from './secrets.ts';
import { startWebhookReceiver } from './testing.ts';

const env = { [ALERTS_KEY_ENV]: randomBytes(32).toString('base64') };

/** A stored Slack channel with `url` sealed as the store seals it, whatever the input rules say today. */
const storedSlack = (url: string): ChannelDoc => ({
  id: 'c1',
  kind: 'channel',
  type: 'slack',
  name: 'old-slack',
  settings: {},
  secrets: { url: seal(url, alertsKey(env)) },
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  updatedBy: 'tester',
});

const alert: AlertDoc = {
  id: 'a1',
  kind: 'alert',
  ruleId: 'r1',
  ruleName: 'test',
  ruleType: 'failureRate',
  endpointId: null,
  firedAt: '2026-12-03T10:00:00.000Z',
  recoveredAt: null,
  value: 0,
  threshold: null,
  summary: 'a notice',
  link: '/alerts',
  deliveries: [],
};
const notice = noticeOf(alert, 'fired', 'https://console.example/');

test('a stored plain-http URL to another host is refused at send time, naming what to do', async () => {
  // `.invalid` never resolves: before, the send was attempted and failed only as "TypeError".
  await assert.rejects(
    sendNotice(storedSlack('http://hooks.nimbus.invalid/services/secret-token'), notice, { env }),
    (err: Error) => {
      assert.equal(
        err.message,
        "channel 'old-slack' (slack): the stored URL is plain http to a host other than this machine: enter it again as https",
      );
      return true;
    },
  );
});

test('a stored value that is not an http URL is refused as not https, not called plain http', async () => {
  // Before, every refused URL was reported as "plain http to a host other than this machine".
  for (const url of ['not a url', 'ftp://hooks.nimbus.invalid/x'])
    await assert.rejects(sendNotice(storedSlack(url), notice, { env }), {
      message: "channel 'old-slack' (slack): the stored URL is not an https URL: enter it again as https",
    });
});

test('a stored plain-http URL to this machine still sends', async () => {
  const receiver = await startWebhookReceiver();
  try {
    await sendNotice(storedSlack(`${receiver.url}/slack`), notice, { env });
    assert.equal(receiver.received.length, 1);
  } finally {
    await receiver.close();
  }
});
