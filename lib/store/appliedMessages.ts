// The ids of the last messages applied to a status row (`appliedMessageIds`): the rule is part of the contract
// (packages/sdk/src/contract/appliedMessageIds.ts), beside the stale-write guard whose already-applied rule reads
// them, so the SDK's test harness keeps them exactly as the store does. Re-exported here for the store's modules.
export { MAX_APPLIED_MESSAGE_IDS, appliedMessageIdsOf, nextAppliedMessageIds } from '@nimbus/sdk/contract';
