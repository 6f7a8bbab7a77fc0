// The callers the prefetch authorization tests sign in as (e2e/console-prefetch-auth*.test.ts), with the role map
// that gives them their rights: a site-wide Reader, an Operator of crmendpoint only (through a group), and a
// signed-in user without any role. `pageAs` fetches a console page's first HTML as one of them.
import assert from 'node:assert/strict';
import type { Principal } from '../auth/principal.ts';
import type { SeededConsole } from './seededConsole.ts';

const user = (name: string, roles: string[], groups: string[]): Principal => ({ kind: 'user', id: `oid-${name}`, name: `${name}@test`, roles, groups });

export const PREFETCH_CALLERS = {
  siteReader: user('reader', ['Reader'], []),
  crmOperator: user('crm-operator', [], ['crm-ops']),
  roleless: user('nobody', [], []),
};

export type PrefetchCaller = keyof typeof PREFETCH_CALLERS;

/** The role map that gives PREFETCH_CALLERS their rights (startSeededConsole's `auth.roleMap`). */
export const PREFETCH_ROLE_MAP = { roles: { Reader: 'Reader' }, groups: { 'crm-ops': 'Operator:crmendpoint' } };

/** The page's HTML as `caller` sees it (the page must answer 200: the caller is signed in). */
export async function pageAs(ui: SeededConsole, caller: PrefetchCaller, path: string): Promise<string> {
  const res = await fetch(ui.url + path, { headers: { cookie: ui.sessionCookie(PREFETCH_CALLERS[caller]) } });
  assert.equal(res.status, 200, `${caller} ${path}`);
  return res.text();
}
