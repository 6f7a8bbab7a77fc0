// The wire contract: one import for every name, status and shape that crosses a process boundary.
// Imports nothing of ours. Reading a catalog from disk lives in ./catalog.ts (it needs node:fs).
export * from './messageTypes.ts';
export * from './properties.ts';
export * from './statuses.ts';
export * from './envelope.ts';
export * from './sessionState.ts';
export * from './heartbeat.ts';
export * from './messages.ts';
export * from './catalogSchema.ts';
export * from './payloadSchema.ts';
export * from './messageIds.ts';
export * from './staleWriteGuard.ts';
export * from './appliedMessageIds.ts';
export * from './attribution.ts';
export * from './parkReason.ts';
