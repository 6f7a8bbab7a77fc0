// The stale-write guard is part of the contract (packages/sdk/src/contract/staleWriteGuard.ts), so the SDK's test
// harness projects outcomes with the very rule the store applies. Re-exported here for the store's modules.
export {
  TERMINAL_STATUSES,
  isGuarded,
  decideStaleWrite,
  asksHistoryForCopy,
  asksHistoryForRetry,
  asksHistoryForAnswer,
  UnclassifiedWriteError,
  type IgnoreReason,
  type GuardDecision,
  type GuardedRowView,
  type IncomingWrite,
} from '@nimbus/sdk/contract';
