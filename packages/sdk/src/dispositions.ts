// Failure dispositions: what an ordinary handler error becomes. Retry (ErrorResponse, block, maybe a scheduled
// RetryRequest), DeadLetter (notification + DLQ, no retry) or Discard (enriched SkipResponse, complete, continue).
import type { ErrorClass } from './retryPolicies.ts';
import { causeChain } from './errors.ts';
import { isNetworkError } from './networkErrors.ts';

export const FailureDisposition = { Retry: 'Retry', DeadLetter: 'DeadLetter', Discard: 'Discard' } as const;
export type FailureDisposition = (typeof FailureDisposition)[keyof typeof FailureDisposition];

export interface FailureDispositionClassifier {
  /** Shown in the Discard SkipResponse text ("Classified as Discard by {name}."). */
  readonly name: string;
  classify(error: unknown, eventTypeId: string, endpointId: string): FailureDisposition;
}

/** Without any classifier every ordinary handler error is retried (the specification's default). */
export const retryEverythingClassifier: FailureDispositionClassifier = {
  name: 'RetryEverythingClassifier',
  classify: () => FailureDisposition.Retry,
};

export interface PermanentFailureClassifierOptions {
  /** Extra error classes treated as permanent (matched on the error or any inner cause). */
  types?: readonly ErrorClass[];
  /** Extra case-insensitive substrings of error names treated as permanent. */
  namePatterns?: readonly string[];
}

/**
 * The default permanent classifier: errors that say the message itself is malformed map to DeadLetter, everything
 * else to Retry. The reference's .NET kinds, mapped to what JavaScript throws for the same mistakes:
 *  - FormatException       -> SyntaxError (JSON.parse, bad literals)
 *  - InvalidCastException  -> TypeError (wrong shape: reading a property of undefined, JSON cannot serialize a value)
 *  - ArgumentException     -> RangeError (invalid dates, lengths, numbers out of range)
 *  - NotSupportedException -> an error named NotSupportedError
 *  - type names containing Serialization, Deserialization or Validation (ZodError too: it is a validation error)
 * Only the thrown error itself and its causes are inspected - never the message text.
 * Network failures are Retry even when they arrive as a TypeError (Node's fetch reports an unreachable host as
 * `TypeError: fetch failed`): see networkErrors.ts. Types the caller lists explicitly still win.
 */
export function defaultPermanentFailureClassifier(
  options: PermanentFailureClassifierOptions = {},
): FailureDispositionClassifier {
  const extraTypes: readonly ErrorClass[] = options.types ?? [];
  const types: ErrorClass[] = [SyntaxError, TypeError, RangeError, ...extraTypes];
  const patterns = [
    'serialization',
    'deserialization',
    'validation',
    'notsupported',
    'zoderror',
    ...(options.namePatterns ?? []).map((p) => p.toLowerCase()),
  ];
  return {
    name: 'DefaultPermanentFailureClassifier',
    classify(error) {
      const chain = causeChain(error);
      if (chain.some((e) => extraTypes.some((t) => e instanceof t))) return FailureDisposition.DeadLetter;
      if (isNetworkError(error)) return FailureDisposition.Retry;
      for (const e of chain) {
        if (types.some((t) => e instanceof t)) return FailureDisposition.DeadLetter;
        const name = e instanceof Error ? `${e.name} ${e.constructor.name}`.toLowerCase() : '';
        if (name && patterns.some((p) => name.includes(p))) return FailureDisposition.DeadLetter;
      }
      return FailureDisposition.Retry;
    },
  };
}

/** Builds a classifier from a function, e.g. `classifier('Adapter', (e) => e instanceof Poison ? 'Discard' : 'Retry')`. */
export function classifier(
  name: string,
  classify: FailureDispositionClassifier['classify'],
): FailureDispositionClassifier {
  return { name, classify };
}

/**
 * Runs a classifier defensively: a classifier that throws or answers something unknown falls back to Retry, the
 * disposition that loses nothing (the operator still sees Failed).
 */
export function classifySafely(
  c: FailureDispositionClassifier,
  error: unknown,
  eventTypeId: string,
  endpointId: string,
): FailureDisposition {
  try {
    const d = c.classify(error, eventTypeId, endpointId);
    return d === 'DeadLetter' || d === 'Discard' || d === 'Retry' ? d : FailureDisposition.Retry;
  } catch {
    return FailureDisposition.Retry;
  }
}
