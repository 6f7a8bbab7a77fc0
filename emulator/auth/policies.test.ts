// Policy store: what survives a restart with a data directory, and what never is written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PolicyError, PolicyStore, ROOT_KEY_NAME, toPolicy } from './policies.ts';

test('namespace and topic policies survive a restart; the namespace key is never written', () => {
  const dir = mkdtempSync(join(tmpdir(), 'policies-'));
  try {
    const first = new PolicyStore('root-key-aaaaaaaaaaaaaaaa', { dataDir: dir });
    first.setNamespacePolicy(toPolicy({ keyName: 'agent', rights: ['Listen'] }));
    first.setEntityPolicies('Orders', [
      toPolicy({ keyName: 'orders-send', rights: ['Send'], primaryKey: 'p'.repeat(20) }),
    ]);
    const file = join(dir, 'access-policies.json');
    assert.doesNotMatch(readFileSync(file, 'utf8'), /root-key/);
    assert.equal(statSync(file).mode & 0o077, 0, 'only the owner may read the keys');

    const second = new PolicyStore('another-root-key-bbbbbbbbb', { dataDir: dir });
    assert.deepEqual(second.namespacePolicy('AGENT')?.rights, ['Listen']);
    assert.equal(second.entityPolicy('orders', 'orders-send')?.primaryKey, 'p'.repeat(20));
    assert.equal(second.namespacePolicy(ROOT_KEY_NAME)?.primaryKey, 'another-root-key-bbbbbbbbb');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the namespace key cannot be replaced or deleted through the store; Manage needs Send and Listen', () => {
  const store = new PolicyStore('root-key-aaaaaaaaaaaaaaaa');
  assert.throws(
    () => store.setNamespacePolicy(toPolicy({ keyName: ROOT_KEY_NAME, rights: ['Send'] })),
    PolicyError,
  );
  assert.throws(() => store.deleteNamespacePolicy(ROOT_KEY_NAME), PolicyError);
  assert.throws(() => toPolicy({ keyName: 'x', rights: ['Manage'] }), /Manage requires Send and Listen/);
  assert.throws(
    () =>
      store.setEntityPolicies('t', [
        toPolicy({ keyName: 'a', rights: ['Send'] }),
        toPolicy({ keyName: 'A', rights: ['Listen'] }),
      ]),
    PolicyError,
  );
});

test('a damaged policy file is reported and ignored: nothing is granted from it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'policies-'));
  try {
    writeFileSync(join(dir, 'access-policies.json'), '{"version":1,"namespace":[{"keyName":"x"');
    const messages: string[] = [];
    const store = new PolicyStore('root-key-aaaaaaaaaaaaaaaa', {
      dataDir: dir,
      onLoadError: (m) => messages.push(m),
    });
    assert.equal(store.listNamespacePolicies().length, 1);
    assert.match(messages[0] ?? '', /could not be read/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
