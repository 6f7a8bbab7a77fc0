// The check a job control makes before the job is read (authorizeControl.ts) must refuse no one that some job kind
// would allow: it stands for every kind. Checked against the real role rules, for users and service principals with
// each role, site-wide and on one endpoint.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Principal } from '../auth/principal.ts';
import { ROLES, decide, type RoleAssignment } from '../auth/roles.ts';
import { ANY_JOB_KIND } from './authorizeControl.ts';
import { JOB_KINDS } from './jobs.ts';

test('whoever may run some kind of job somewhere passes the check made before the job is read', () => {
  const principals: Principal[] = [
    { kind: 'user', id: 'u1', name: 'ada', roles: [], groups: [] },
    { kind: 'service', id: 'app-1', name: 'erp', roles: [], groups: [] },
  ];
  const grids: RoleAssignment[][] = ROLES.flatMap((role) => [
    [{ role, endpointId: null, source: 'test' }],
    [{ role, endpointId: 'billing', source: 'test' }],
  ]);
  let allowedSomewhere = 0;
  for (const principal of principals)
    for (const assignments of grids)
      for (const place of [undefined, 'billing']) {
        const kinds = JOB_KINDS.filter((k) => decide(principal, assignments, k, place).allowed);
        if (kinds.length === 0) continue;
        allowedSomewhere++;
        assert.equal(
          decide(principal, assignments, ANY_JOB_KIND, place).allowed,
          true,
          `${principal.kind} with ${JSON.stringify(assignments)} may ${kinds.join('/')} ${place ?? 'site-wide'} but not ${ANY_JOB_KIND}`,
        );
      }
  assert.ok(allowedSomewhere > 0, 'the grid reaches principals who may run a job');
});
