// Closes several things in order, each step bounded, every step run even when an earlier one throws or hangs.
// Why: a test harness closed its parts one after the other with plain awaits; one step that threw skipped the rest
// (the embedded Cosmos server and the fault proxy stayed listening) and one that never ended held them open too.
// Either way the test file's process never exited and the runner cut it off after its 20-minute file time-out,
// with no word of which step was at fault. Here a step that fails or outlasts its bound is named, the rest still
// close, and the error comes after them.
import { DEADLINE_PASSED, raceDeadline } from './deadline.ts';

export interface CloseStep {
  /** What the step closes, as the error names it. */
  name: string;
  run: () => Promise<unknown> | unknown;
}

/** Thrown by closeSteps when a step failed or did not end within its bound; `failures` name each such step. */
export class CloseStepsError extends Error {
  constructor(readonly failures: readonly string[]) {
    super(`closing: ${failures.join('; ')}`);
    this.name = 'CloseStepsError';
  }
}

/**
 * Runs `steps` one after the other. A step that throws, or has not ended after `boundMs`, is recorded and the next
 * step runs anyway (a hung step goes on unawaited; its later rejection is observed and dropped). Rejects with a
 * CloseStepsError naming every such step once all have run.
 */
export async function closeSteps(steps: readonly CloseStep[], boundMs: number): Promise<void> {
  const failures: string[] = [];
  for (const step of steps) {
    try {
      // The bound's timer is not unref'd: a hung step must end in this error, not in a process that exits silently.
      const ended = await raceDeadline(Promise.resolve().then(step.run), { ms: boundMs });
      if (ended === DEADLINE_PASSED) failures.push(`${step.name}: did not end within ${boundMs} ms`);
    } catch (err) {
      failures.push(`${step.name}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
    }
  }
  if (failures.length > 0) throw new CloseStepsError(failures);
}
