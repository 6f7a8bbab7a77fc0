// Topics through the real ServiceBusAdministrationClient.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rejectsWith, startAdminHarness, type AdminHarness } from './test-harness.ts';

describe('admin plane: topics', () => {
  let h: AdminHarness;
  before(async () => {
    h = await startAdminHarness();
  });
  after(async () => {
    await h.close();
  });

  test('createTopic stores the options and getTopic reads them back', async () => {
    const created = await h.admin.createTopic('t-create', {
      defaultMessageTimeToLive: 'PT1H',
      maxSizeInMegabytes: 2048,
      requiresDuplicateDetection: true,
      duplicateDetectionHistoryTimeWindow: 'PT5M',
      userMetadata: 'owner <ops> & co',
      supportOrdering: false,
    });
    assert.equal(created.name, 't-create');
    const got = await h.admin.getTopic('t-create');
    assert.equal(got.name, 't-create');
    assert.equal(got.defaultMessageTimeToLive, 'PT1H');
    assert.equal(got.maxSizeInMegabytes, 2048);
    assert.equal(got.requiresDuplicateDetection, true);
    assert.equal(got.duplicateDetectionHistoryTimeWindow, 'PT5M');
    assert.equal(got.userMetadata, 'owner <ops> & co');
    assert.equal(got.supportOrdering, false);
    assert.equal(got.status, 'Active');
    assert.equal(got.availabilityStatus, 'Available');
    // The broker's default for an unset TTL is "infinite", which Azure writes as TimeSpan.MaxValue.
    const plain = await h.admin.createTopic('t-defaults');
    assert.equal(plain.defaultMessageTimeToLive, 'P10675199DT2H48M5.4775807S');
  });

  test('creating an existing topic fails with MessageEntityAlreadyExistsError (409)', async () => {
    await h.admin.createTopic('t-dup');
    await rejectsWith(h.admin.createTopic('t-dup'), 'MessageEntityAlreadyExistsError', 409);
  });

  test('getTopic of a missing topic fails with MessageEntityNotFoundError (404)', async () => {
    await rejectsWith(h.admin.getTopic('t-missing'), 'MessageEntityNotFoundError', 404);
  });

  test('updateTopic (PUT with If-Match) changes an existing topic and 404s for a missing one', async () => {
    await h.admin.createTopic('t-update', { defaultMessageTimeToLive: 'PT1H' });
    const topic = await h.admin.getTopic('t-update');
    topic.defaultMessageTimeToLive = 'PT2M';
    topic.status = 'SendDisabled';
    const updated = await h.admin.updateTopic(topic);
    assert.equal(updated.defaultMessageTimeToLive, 'PT2M');
    assert.equal(updated.status, 'SendDisabled');
    assert.equal((await h.admin.getTopic('t-update')).defaultMessageTimeToLive, 'PT2M');

    await rejectsWith(
      h.admin.updateTopic({ ...topic, name: 't-update-missing' }),
      'MessageEntityNotFoundError',
      404,
    );
  });

  test('deleteTopic removes the topic; deleting it again is a 404', async () => {
    await h.admin.createTopic('t-delete');
    await h.admin.deleteTopic('t-delete');
    await rejectsWith(h.admin.getTopic('t-delete'), 'MessageEntityNotFoundError', 404);
    await rejectsWith(h.admin.deleteTopic('t-delete'), 'MessageEntityNotFoundError', 404);
  });

  test('topicExists answers true for an existing topic and false for a missing or deleted one', async () => {
    // The SDK turns every failure into false, so "true" is what proves the request reached the emulator.
    await h.admin.createTopic('t-exists');
    assert.equal(await h.admin.topicExists('t-exists'), true);
    assert.equal(await h.admin.topicExists('t-exists-not'), false);
    await h.admin.deleteTopic('t-exists');
    assert.equal(await h.admin.topicExists('t-exists'), false);
  });

  test('an invalid topic name is rejected with a 400 that says why', async () => {
    const message = await rejectsWith(h.admin.createTopic('bad name!'), 'ServiceError', 400);
    assert.match(message, /Invalid topic name/);
  });

  test('a malformed duration is rejected with a 400 naming the field', async () => {
    const message = await rejectsWith(
      h.admin.createTopic('t-bad-ttl', { defaultMessageTimeToLive: '1 hour' }),
      'ServiceError',
      400,
    );
    assert.match(message, /DefaultMessageTimeToLive/);
    assert.equal(await h.admin.topicExists('t-bad-ttl'), false);
  });
});

describe('admin plane: listing topics', () => {
  let h: AdminHarness;
  before(async () => {
    h = await startAdminHarness();
    for (const name of ['p-e', 'p-a', 'p-c', 'p-b', 'p-d']) await h.admin.createTopic(name);
  });
  after(async () => {
    await h.close();
  });

  test('listTopics pages with $top and follows the next link ($skip), in name order', async () => {
    const pages: string[][] = [];
    for await (const page of h.admin.listTopics().byPage({ maxPageSize: 2 }))
      pages.push(page.map((t) => t.name));
    assert.deepEqual(pages, [['p-a', 'p-b'], ['p-c', 'p-d'], ['p-e']]);
  });

  test('a continuation token is a $skip', async () => {
    const pages: string[][] = [];
    for await (const page of h.admin.listTopics().byPage({ maxPageSize: 10, continuationToken: '3' })) {
      pages.push(page.map((t) => t.name));
    }
    assert.deepEqual(pages, [['p-d', 'p-e']]);
  });

  test('a server-side page limit caps $top, and the next link still lists every topic', async () => {
    const small = await startAdminHarness({ maxPageSize: 2 });
    try {
      for (const name of ['x1', 'x2', 'x3']) await small.admin.createTopic(name);
      const pages: number[] = [];
      for await (const page of small.admin.listTopics().byPage({ maxPageSize: 50 })) pages.push(page.length);
      assert.deepEqual(pages, [2, 1]);
    } finally {
      await small.close();
    }
  });
});
