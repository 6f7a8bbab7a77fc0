import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recountCommand } from './recountCommand.ts';

test('the recount is named as the npm script outside the image and as the image role inside it', () => {
  assert.equal(recountCommand({}), 'npm run recount --');
  assert.equal(recountCommand({ NIMBUS_IMAGE_ROLE: '' }), 'npm run recount --');
  assert.equal(recountCommand({ NIMBUS_IMAGE_ROLE: 'resolver' }), 'docker run --rm <image> recount');
  assert.equal(recountCommand({ NIMBUS_IMAGE_ROLE: 'recount' }), 'docker run --rm <image> recount');
});
