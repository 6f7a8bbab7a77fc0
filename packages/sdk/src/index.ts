// The NimBus subscriber/publisher SDK. See docs/sdk.md for the adapter author's guide.
export * from './errors.ts';
export * from './retryPolicy.ts';
export * from './retryPolicies.ts';
export * from './dispositions.ts';
export { isNetworkError, NETWORK_ERROR_CODES } from './networkErrors.ts';
export * from './handlers.ts';
export * from './pipeline.ts';
export { validationBehavior } from './validation.ts';
export { CircuitBreaker, type BreakerPermit, type CircuitBreakerOptions } from './circuitBreaker.ts';
export { Inbox, InboxStoreError, MemoryInboxStore, inboxKey, type InboxStore } from './inbox.ts';
// The Cosmos-backed inbox store is not re-exported: it loads @azure/cosmos (about half a second and ~28 MB), which
// a host without a durable inbox should not pay. Import it from '@nimbus/sdk/cosmos' (see docs/sdk.md).
export { Dispatcher, type DeliveryPort, type DispatcherOptions, type DeliveryResult } from './dispatcher.ts';
export { SubscriberHost, createSubscriberHost, type SubscriberHostOptions } from './subscriberHost.ts';
export {
  DeferredProcessor,
  createDeferredProcessor,
  type DeferredProcessorOptions,
  type ReplayPass,
} from './deferredProcessor.ts';
export {
  Publisher,
  createPublisher,
  deterministicMessageId,
  sessionKeysFromCatalog,
  PublishValidationError,
  type PublisherOptions,
  type PublishOptions,
  type PublishedEvent,
  type ScheduledSequence,
} from './publisher.ts';
export {
  HandoffClient,
  createHandoffClient,
  handoffCoordinatesSchema,
  HandoffClientError,
  settlementMessageId,
  type HandoffClientOptions,
  type HandoffCoordinates,
} from './handoffClient.ts';
export { createHandoffToken, readHandoffToken, isHandoffToken, type HandoffToken } from './handoffToken.ts';
export {
  ConsoleHandoffClient,
  createConsoleHandoffClient,
  consoleHandoffCoordinatesSchema,
  HandoffRequestError,
  NoTokenError,
  type ConsoleHandoffClientOptions,
  type ConsoleHandoffCoordinates,
  type ConsoleToken,
  type HandoffSettlement,
  type SettleOptions,
  type TokenCredentialLike,
  type TokenProvider,
  type TokenRequest,
} from './consoleHandoffClient.ts';
export {
  AgentClient,
  AgentRequestError,
  createAgentClient,
  PUBLISH_IN_FLIGHT_CODE,
  RESULT_TOO_LARGE,
  SETTLED_CODE,
  type AgentCatalog,
  type AgentClientOptions,
  type AgentPublished,
  type AgentSettleInput,
  type AgentSettlement,
  type HandoffRef,
  type HandoffWorkResult,
  type PendingHandoff,
  type ReceiveOptions,
  type ServeOptions,
} from './agentClient.ts';
export { route, afterHandler, type HandlerOutcome, type DecisionEnv, type HandoffMark } from './decide.ts';
export type { Effect, Settlement, Signal } from './effects.ts';
export { SdkProp } from './wire.ts';
export { SDK_VERSION } from './version.ts';
// Ties an operation to a caller's AbortSignal without leaking listeners (the Resolver uses it too).
export { withLinkedSignal } from './abortScope.ts';
export { sessionLockHorizon, type SessionLockHorizon, type SessionLockView } from './sessionLockHorizon.ts';
export { MissingEntityError, EntityCheckError } from './entityCheck.ts';
// W3C trace context on messages and messaging spans (OpenTelemetry API only; no cost when no SDK is registered).
export * from './tracing.ts';
