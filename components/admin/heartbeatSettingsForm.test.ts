// The Health settings form's rules: which version a save names, and how a refused save sorts the edits.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { afterConflict, edit, NO_EDITS, reapply, saveBody, versionToSend, type ServerSettings } from './heartbeatSettingsForm.ts';

const v1: ServerSettings = { enabled: false, intervalSeconds: 300, timeoutSeconds: 60, version: 'v1' };

describe('heartbeat settings form', () => {
  test('Save sends the edited fields only, with the version they are based on', () => {
    const e = edit(NO_EDITS, v1, 'intervalSeconds', '600');
    assert.deepEqual(saveBody(e, v1), { intervalSeconds: 600, version: 'v1' });
  });

  test('another change to an untouched field moves the version sent; a change to an edited field keeps the old one', () => {
    const e = edit(NO_EDITS, v1, 'intervalSeconds', '600');
    // Seen on the page: the other field changed, the edited one did not: the page's version is safe to name.
    assert.equal(versionToSend(e, { ...v1, enabled: true, version: 'v2' }), 'v2');
    // The edited field moved: the version editing began from, so the server refuses the save.
    assert.equal(versionToSend(e, { ...v1, intervalSeconds: 120, version: 'v2' }), 'v1');
  });

  test('after a conflict: a field changed by both leaves the form to re-apply, the others stay edited', () => {
    let e = edit(NO_EDITS, v1, 'intervalSeconds', '600');
    e = edit(e, v1, 'timeoutSeconds', '45');
    const fresh = { ...v1, intervalSeconds: 120, version: 'v2' };
    const r = afterConflict(e, fresh);
    assert.deepEqual(r.conflicts, [{ field: 'intervalSeconds', theirs: 120, yours: '600' }]);
    assert.deepEqual(r.edits.draft, { timeoutSeconds: '45' });
    assert.deepEqual(saveBody(r.edits, fresh), { timeoutSeconds: 45, version: 'v2' });
    const again = reapply(r.edits, fresh, r.conflicts);
    assert.deepEqual(saveBody(again, fresh), { intervalSeconds: 600, timeoutSeconds: 45, version: 'v2' });
  });

  test('after a conflict on untouched fields only, every edit stays, based on the fresh version', () => {
    const e = edit(NO_EDITS, v1, 'enabled', true);
    const fresh = { ...v1, timeoutSeconds: 30, version: 'v3' };
    const r = afterConflict(e, fresh);
    assert.deepEqual(r.conflicts, []);
    assert.deepEqual(saveBody(r.edits, fresh), { enabled: true, version: 'v3' });
  });
});
