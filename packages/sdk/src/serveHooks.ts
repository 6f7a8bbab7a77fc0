// The agent loop's (AgentClient.serve) calls of its caller's hooks, contained. A hook that threw (or, an async
// function passed where `void` is typed, rejected) used to end the loop: serve rejected, or the process died of an
// unhandled rejection, and no handoff was worked any more. An `onSettled` failure is now handed to `onError`
// (stage 'onSettled'); an `onError` failure has no hook left to go to and is logged (its type only: a hook's
// message may carry a payload) by the SDK's logger. Hooks are not awaited: the loop does not wait on its observers.
import type { Logger } from 'pino';
import type { ServeOptions } from './agentClient.ts';
import { defaultSdkLogger } from './logger.ts';

export interface ContainedHooks {
  error: NonNullable<ServeOptions['onError']>;
  settled: NonNullable<ServeOptions['onSettled']>;
}

export function containHooks(
  options: Pick<ServeOptions, 'onError' | 'onSettled'>,
  log: () => Pick<Logger, 'warn'> = defaultSdkLogger,
): ContainedHooks {
  const error: ContainedHooks['error'] = (err, context) =>
    contained(
      () => options.onError?.(err, context),
      (failure) => log().warn({ hook: 'onError', stage: context.stage, type: typeOf(failure) }, 'serve: the onError hook failed (ignored)'),
    );
  const settled: ContainedHooks['settled'] = (handoff, outcome, alreadySettled, conflictDetail) =>
    contained(
      () => options.onSettled?.(handoff, outcome, alreadySettled, conflictDetail),
      (failure) => error(failure, { stage: 'onSettled', eventId: handoff.eventId }),
    );
  return { error, settled };
}

function contained(call: () => unknown, failed: (err: unknown) => void): void {
  let result: unknown;
  try {
    result = call();
  } catch (err) {
    failed(err);
    return;
  }
  if (typeof (result as PromiseLike<unknown> | undefined)?.then === 'function') (result as PromiseLike<unknown>).then(undefined, failed);
}

const typeOf = (err: unknown) => (err instanceof Error ? err.name : typeof err);
