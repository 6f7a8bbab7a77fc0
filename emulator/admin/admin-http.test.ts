// What the admin plane does with requests the SDK would never send: oversized and malformed bodies, wrong
// entity kinds, unknown paths and methods. Raw HTTP, since the client cannot produce these.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authorization, rejectsWith, startAdminHarness, type AdminHarness } from './test-harness.ts';

const ENTRY_TYPE = 'application/atom+xml;type=entry;charset=utf-8';

function entry(inner: string): string {
  return `<?xml version="1.0" encoding="utf-8"?><entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">${inner}</content></entry>`;
}

describe('admin plane: HTTP boundary', () => {
  let h: AdminHarness;
  before(async () => {
    h = await startAdminHarness({ maxBodyBytes: 4096 });
  });
  after(async () => {
    await h.close();
  });

  async function put(path: string, body: string): Promise<{ status: number; text: string }> {
    const url = `${h.baseUrl}${path}?api-version=2021-05`;
    const res = await fetch(url, {
      method: 'PUT',
      headers: { 'content-type': ENTRY_TYPE, authorization: authorization(url) },
      body,
    });
    return { status: res.status, text: await res.text() };
  }

  test('a body over the limit is refused with 413 and nothing is created', async () => {
    const big = entry(
      `<TopicDescription><UserMetadata>${'x'.repeat(8192)}</UserMetadata></TopicDescription>`,
    );
    const res = await put('/too-big', big);
    assert.equal(res.status, 413);
    assert.match(res.text, /<Detail>The request body is larger than 4096 bytes\.<\/Detail>/);
    assert.equal(await h.admin.topicExists('too-big'), false);
  });

  test('malformed XML is a 400 with the parser message', async () => {
    const res = await put('/broken', '<entry><content><TopicDescription></content></entry>');
    assert.equal(res.status, 400);
    assert.match(res.text, /not well-formed XML/);
  });

  test('a body naming another kind of entity is a 400', async () => {
    const res = await put('/kind/Subscriptions/s', entry('<TopicDescription/>'));
    assert.equal(res.status, 400);
    assert.match(res.text, /Expected a SubscriptionDescription/);
  });

  test('a queue and a topic share one name space: PUT of a QueueDescription on a topic name is a 409', async () => {
    await h.admin.createTopic('shared-name');
    await rejectsWith(h.admin.createQueue('shared-name'), 'MessageEntityAlreadyExistsError', 409);
    const queues = [];
    for await (const q of h.admin.listQueues()) queues.push(q);
    assert.deepEqual(queues, []);
  });

  test('an unsupported method is a 405 and an unknown $ path a 404, both with an XML error body', async () => {
    await h.admin.createTopic('m');
    const post = await fetch(`${h.baseUrl}/m`, {
      method: 'POST',
      body: '',
      headers: { authorization: authorization(`${h.baseUrl}/m`) },
    });
    assert.equal(post.status, 405);
    assert.match(await post.text(), /<Error><Code>405<\/Code>/);
    const unknown = await fetch(`${h.baseUrl}/$Resources/EventHubs`, {
      headers: { authorization: authorization(`${h.baseUrl}/$Resources/EventHubs`) },
    });
    assert.equal(unknown.status, 404);
    assert.match(await unknown.text(), /<Error><Code>404<\/Code>/);
  });

  test('bad paging parameters are a 400', async () => {
    const res = await fetch(`${h.baseUrl}/$Resources/Topics?$top=-1`, {
      headers: { authorization: authorization(`${h.baseUrl}/$Resources/Topics`) },
    });
    assert.equal(res.status, 400);
    assert.match(await res.text(), /\$top must be a non-negative whole number/);
  });

  test('getNamespaceProperties answers', async () => {
    const ns = await h.admin.getNamespaceProperties();
    assert.equal(ns.name, 'emulator');
    assert.equal(ns.messagingSku, 'Standard');
  });
});
