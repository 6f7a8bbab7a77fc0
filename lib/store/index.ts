// The message store: one import for the Resolver, the console backend and the tests.
export * from './cosmos.ts';
export * from './errors.ts';
export * from './guard.ts';
export * from './counters.ts';
export * from './paging.ts';
export * from './schemas.ts';
export * from './store.ts';
export { docId, statusRowId } from './ids.ts';
export { LeaseStore, holdLease, keepRenewing, LEASES_CONTAINER, type Lease, type HeldLease, type HoldLeaseOptions } from './leases.ts';
export * from './timeSeries.ts';
export { fingerprintOf, normaliseErrorText, FAILURE_STATUSES, type Fingerprint, type FingerprintInput } from './fingerprint.ts';
export { backfillFingerprints, type BackfillResult } from './backfillFingerprints.ts';
export { blockerOf, blockerIsOrNoneSql, type ParkedRef } from './parkedBlocker.ts';
export { isAnswer, isSettling, isStateBearing, answerSql } from './answerRule.ts';
