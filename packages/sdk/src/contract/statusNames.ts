// The resolution statuses as names, without their schemas (statuses.ts adds those): importing them costs a browser
// bundle nothing of zod (names.ts).

export const ResolutionStatus = {
  Pending: 'Pending',
  Completed: 'Completed',
  Failed: 'Failed',
  Deferred: 'Deferred',
  Skipped: 'Skipped',
  Unsupported: 'Unsupported',
  DeadLettered: 'DeadLettered',
} as const;
export type ResolutionStatus = (typeof ResolutionStatus)[keyof typeof ResolutionStatus];

export const ALL_RESOLUTION_STATUSES = Object.values(ResolutionStatus) as readonly ResolutionStatus[];

/** A Pending row parked on an external system (PendingHandoffResponse) carries this sub-status. */
export const PendingSubStatus = {
  Handoff: 'Handoff',
} as const;
export type PendingSubStatus = (typeof PendingSubStatus)[keyof typeof PendingSubStatus];
