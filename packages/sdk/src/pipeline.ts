// Pipeline behaviours (middleware) and lifecycle observers.
// Behaviours wrap the whole dispatch of a delivery, for every message type, first registered = outermost. They may
// short-circuit (return without calling next: a success without the handler - the SDK settles the delivery as if
// the handler had returned, the specification's "short-circuit success for known idempotent no-ops"), throw (the
// delivery is dead-lettered with a Resolver notification), or catch what next() throws (see docs/sdk.md:
// swallowing breaks the audit trail).
// Observers watch without changing anything; a throwing observer is logged and ignored.
import type { MessageType } from './contract/index.ts';

export interface MessageInfo {
  messageId: string;
  sessionId?: string | undefined;
  correlationId?: string | undefined;
  messageType?: MessageType | undefined;
  eventId?: string | undefined;
  eventTypeId?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  deliveryCount?: number | undefined;
  retryCount: number;
}

export interface PipelineContext {
  readonly endpointId: string;
  readonly message: MessageInfo;
  /** Cancelled when the processor stops. */
  readonly signal: AbortSignal;
  /**
   * Dead-letters the delivery now. Throw MessageAlreadyDeadLetteredError afterwards, or return: either way the SDK
   * sends the Resolver notification without dead-lettering a second time.
   */
  deadLetter(reason: string, description?: string): Promise<void>;
}

/**
 * Wraps the handling of a delivery. Returning without calling `next()` skips the handler only: the delivery is
 * still settled as a success (answered, completed, parked when its session is blocked). To refuse a message, throw,
 * or call `ctx.deadLetter` and throw MessageAlreadyDeadLetteredError.
 */
export type PipelineBehavior = (ctx: PipelineContext, next: () => Promise<void>) => Promise<void>;

export type CircuitState = 'Closed' | 'Open' | 'HalfOpen';

/** The hooks of the error-handling reference; every one optional. */
export interface LifecycleObserver {
  /** Every delivery, before the pipeline runs. */
  onMessageReceived?(message: MessageInfo): void | Promise<void>;
  /** The pipeline returned without throwing: success, discard, unsupported, skip, settlements, heartbeats. */
  onMessageCompleted?(message: MessageInfo): void | Promise<void>;
  /** Transient, permanent, validation-rejected and unexpected failures (not a Retry-disposition handler failure). */
  onMessageFailed?(message: MessageInfo, error: unknown): void | Promise<void>;
  /** Only when the delivery ended in the dead-letter queue, after the dead-letter call. */
  onMessageDeadLettered?(message: MessageInfo, reason: string): void | Promise<void>;
  onCircuitStateChanged?(endpointId: string, from: CircuitState, to: CircuitState): void | Promise<void>;
}

export function composePipeline(
  behaviors: readonly PipelineBehavior[],
  ctx: PipelineContext,
  terminal: () => Promise<void>,
): () => Promise<void> {
  let next = terminal;
  for (let i = behaviors.length - 1; i >= 0; i--) {
    const behavior = behaviors[i]!;
    const inner = next;
    let called = false;
    next = () => {
      // Calling next twice would run (and settle) the delivery twice.
      if (called) return Promise.reject(new Error('a pipeline behaviour called next() twice'));
      called = true;
      return behavior(ctx, inner);
    };
  }
  return next;
}
