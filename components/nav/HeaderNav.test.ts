import { test } from 'node:test';
import assert from 'node:assert/strict';
import { currentHref, type NavLink } from './HeaderNav.tsx';

const LINKS: NavLink[] = [
  ['/', 'Endpoints'],
  ['/monitor', 'Monitor'],
  ['/admin', 'Admin'],
  ['/admin/access', 'Access'],
];

test('the current link is the longest one owning the path; Endpoints owns the endpoint and event pages', () => {
  assert.equal(currentHref(LINKS, '/'), '/');
  assert.equal(currentHref(LINKS, '/endpoints/billingendpoint/events/e1'), '/');
  assert.equal(currentHref(LINKS, '/monitor'), '/monitor');
  assert.equal(currentHref(LINKS, '/admin/health'), '/admin');
  assert.equal(currentHref(LINKS, '/admin/access'), '/admin/access');
  assert.equal(currentHref(LINKS, '/administration'), null);
  assert.equal(currentHref(LINKS, '/search'), null);
});
