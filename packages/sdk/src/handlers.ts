// Typed handlers per event type, and the context a handler gets.
import type { ZodType } from 'zod';
import { describeIssues } from './contract/index.ts';
import type { MessageType } from './contract/index.ts';
import type { HandoffMark } from './decide.ts';
import type { HandoffToken } from './handoffToken.ts';
import { PermanentFailureError } from './errors.ts';

export interface HandlerContext {
  readonly endpointId: string;
  readonly messageId: string;
  /** Always there in a handler: a delivery without EventId is dead-lettered before any handler runs. */
  readonly eventId: string;
  readonly eventTypeId: string;
  readonly messageType?: MessageType | undefined;
  /** Always there: the endpoint's subscriptions require sessions. */
  readonly sessionId: string;
  readonly correlationId?: string | undefined;
  readonly parentMessageId?: string | undefined;
  /** The chain's first message id (`self` resolved to this message's id). */
  readonly originatingMessageId: string;
  readonly from?: string | undefined;
  /** 0 on the first delivery; n on the n-th scheduled retry. */
  readonly retryCount: number;
  /** Aborted when the processor stops. A handler that honours it stops without an outcome: nothing is settled. */
  readonly signal: AbortSignal;
  /**
   * The work continues in an external system. The Resolver records Pending (Handoff), the session blocks so later
   * events wait in order, and the event is settled later by the handoff client (complete/fail). Last call wins; a
   * throw after it takes the failure path instead. `expectedBy` is an instant or milliseconds from now. Returns the
   * handoff token: store it with the external job and pass it to the handoff client's complete/fail.
   */
  markPendingHandoff(reason: string, externalJobId?: string, expectedBy?: Date | number): HandoffToken;
}

export type EventHandler<T = unknown> = (event: T, ctx: HandlerContext) => void | Promise<void>;

interface Registration {
  handler: EventHandler<never>;
  schema?: ZodType | undefined;
}

/** Handlers by event type id (case-sensitive, as on the wire), plus an optional fallback for any other type. */
export class HandlerRegistry {
  private readonly handlers = new Map<string, Registration>();
  private fallbackHandler: EventHandler<unknown> | undefined;

  /** Registers the handler of one event type; with a schema the payload is validated (a mismatch is permanent). */
  on<T>(eventTypeId: string, handler: EventHandler<T>, options: { schema?: ZodType<T> } = {}): this {
    if (this.handlers.has(eventTypeId))
      throw new Error(`a handler for '${eventTypeId}' is already registered`);
    this.handlers.set(eventTypeId, { handler: handler as EventHandler<never>, schema: options.schema });
    return this;
  }

  /** Runs for every event type without its own handler (instead of answering Unsupported). */
  fallback(handler: EventHandler<unknown>): this {
    this.fallbackHandler = handler;
    return this;
  }

  has(eventTypeId: string): boolean {
    return this.handlers.has(eventTypeId) || this.fallbackHandler !== undefined;
  }

  async invoke(eventTypeId: string, payload: unknown, ctx: HandlerContext): Promise<void> {
    const registration = this.handlers.get(eventTypeId);
    if (!registration) {
      if (!this.fallbackHandler) throw new Error(`no handler for '${eventTypeId}'`);
      await this.fallbackHandler(payload, ctx);
      return;
    }
    let event = payload;
    if (registration.schema) {
      const parsed = registration.schema.safeParse(payload);
      if (!parsed.success)
        throw new PermanentFailureError(
          `${eventTypeId} payload does not match its schema: ${describeIssues(parsed.error)}`,
        );
      event = parsed.data;
    }
    await (registration.handler as EventHandler<unknown>)(event, ctx);
  }
}

/** Holds the handoff a handler marked during one invocation. */
export class HandoffRecorder {
  mark: HandoffMark | undefined;
  private readonly now: () => Date;
  constructor(now: () => Date) {
    this.now = now;
  }

  record(reason: string, externalJobId?: string, expectedBy?: Date | number): void {
    if (typeof reason !== 'string' || reason.trim() === '')
      throw new Error('markPendingHandoff needs a reason');
    const at = typeof expectedBy === 'number' ? new Date(this.now().getTime() + expectedBy) : expectedBy;
    if (at !== undefined && Number.isNaN(at.getTime()))
      throw new Error('markPendingHandoff: expectedBy is not a valid time');
    // Sent as toISOString(), which writes a year outside 0000-9999 in the expanded form (+010000-…): the Resolver
    // records no such ExpectedBy (it names it a problem), so the handler hears of it now instead.
    const year = at?.getUTCFullYear();
    if (year !== undefined && (year < 0 || year > 9999))
      throw new Error('markPendingHandoff: expectedBy is outside the years 0000-9999');
    this.mark = { reason, externalJobId: externalJobId || undefined, expectedBy: at };
  }
}
