// Which retry policy applies to a failure: exception rules (typed, matching the error or any inner cause, or by
// substring of the error text) in registration order, then the event-type policy, then the default, else none.
import { causeChain, errorSearchText, retryAfterHintMs } from './errors.ts';
import { delayWithHintMs, retryDelayMs, retryPolicy } from './retryPolicy.ts';
import type { RetryPolicy, RetryPolicyInput } from './retryPolicy.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ErrorClass = abstract new (...args: any[]) => Error;

export interface ExceptionRuleOptions {
  /** Only for these event types (case-insensitive); all event types when omitted. */
  eventTypes?: readonly string[];
}

type ExceptionRule =
  | { kind: 'type'; type: ErrorClass; policy: RetryPolicy; eventTypes?: ReadonlySet<string> | undefined }
  | { kind: 'text'; text: string; policy: RetryPolicy; eventTypes?: ReadonlySet<string> | undefined };

export interface RetryDecision {
  policy: RetryPolicy;
  /** Why this policy was chosen, for logs. */
  source: 'exception-rule' | 'event-type' | 'default';
}

export interface ScheduledRetry {
  /** RetryCount the RetryRequest carries (attempt + 1). */
  retryCount: number;
  delayMs: number;
}

/** Builder and resolver of retry policies for one endpoint. */
export class RetryPolicies {
  private readonly rules: ExceptionRule[] = [];
  private readonly byEventType = new Map<string, RetryPolicy>();
  private defaultPolicy: RetryPolicy | undefined;

  /** Matches the error, or any inner cause, that is an instance of `type` (subclasses included). */
  addExceptionRule(type: ErrorClass, policy: RetryPolicyInput, options: ExceptionRuleOptions = {}): this {
    this.rules.push({
      kind: 'type',
      type,
      policy: retryPolicy(policy),
      eventTypes: lowerSet(options.eventTypes),
    });
    return this;
  }

  /**
   * Matches a case-insensitive substring of the error text (names, messages and stacks of the whole cause chain).
   * Prefer the typed form: stack traces make text matches broader than they look.
   */
  addExceptionTextRule(text: string, policy: RetryPolicyInput, options: ExceptionRuleOptions = {}): this {
    if (text.trim() === '') throw new Error('an exception text rule needs a non-empty text');
    this.rules.push({
      kind: 'text',
      text: text.toLowerCase(),
      policy: retryPolicy(policy),
      eventTypes: lowerSet(options.eventTypes),
    });
    return this;
  }

  addEventTypePolicy(eventTypeId: string, policy: RetryPolicyInput): this {
    this.byEventType.set(eventTypeId.toLowerCase(), retryPolicy(policy));
    return this;
  }

  setDefaultPolicy(policy: RetryPolicyInput): this {
    this.defaultPolicy = retryPolicy(policy);
    return this;
  }

  /** The policy for this failure, or undefined when nothing matches (no retry). */
  resolve(error: unknown, eventTypeId: string | undefined): RetryDecision | undefined {
    const type = eventTypeId?.toLowerCase();
    let text: string | undefined;
    for (const rule of this.rules) {
      if (rule.eventTypes && (type === undefined || !rule.eventTypes.has(type))) continue;
      if (rule.kind === 'type') {
        if (causeChain(error).some((e) => e instanceof rule.type))
          return { policy: rule.policy, source: 'exception-rule' };
      } else {
        text ??= errorSearchText(error).toLowerCase();
        if (text.includes(rule.text)) return { policy: rule.policy, source: 'exception-rule' };
      }
    }
    if (type !== undefined) {
      const policy = this.byEventType.get(type);
      if (policy) return { policy, source: 'event-type' };
    }
    if (this.defaultPolicy) return { policy: this.defaultPolicy, source: 'default' };
    return undefined;
  }

  /**
   * Whether to schedule a RetryRequest after the failure of a delivery carrying `retryCount` (0 on the first
   * delivery), and after how long. Undefined when no policy matches or its budget is spent.
   */
  nextRetry(
    error: unknown,
    eventTypeId: string | undefined,
    retryCount: number,
    random: () => number = Math.random,
  ): ScheduledRetry | undefined {
    const decision = this.resolve(error, eventTypeId);
    if (!decision) return undefined;
    const attempt = Math.max(0, Math.floor(retryCount));
    if (attempt >= decision.policy.maxRetries) return undefined;
    const delay = retryDelayMs(decision.policy, attempt, random);
    return {
      retryCount: attempt + 1,
      delayMs: delayWithHintMs(decision.policy, delay, retryAfterHintMs(error)),
    };
  }
}

function lowerSet(values: readonly string[] | undefined): ReadonlySet<string> | undefined {
  return values ? new Set(values.map((v) => v.toLowerCase())) : undefined;
}
