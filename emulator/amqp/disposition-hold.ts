// Tests only: leaves the client's settlements unanswered, as a broker (or a path to it) that stops answering. The
// @azure/service-bus client then waits out its own settlement time-out (60 s, with retries), which is what a test
// of a caller's bounded stop needs to provoke. Never on by default: startEmulator creates one only when asked
// (`testDispositionHold`), and the emulator listens on loopback only.

/** Holds the dispositions on receive links (complete, abandon, dead-letter, defer) while `hold()` is in force. */
export class DispositionHold {
  #holding = false;
  #held = 0;

  /** From now on, every disposition a client sends on a receive link is left unanswered and not applied. */
  hold(): void {
    this.#holding = true;
  }

  /** Dispositions are answered and applied again; those held so far stay unanswered (their messages' locks lapse). */
  resume(): void {
    this.#holding = false;
  }

  /** Dispositions left unanswered so far: the positive signal that a client's settlement is waiting. */
  get held(): number {
    return this.#held;
  }

  /** True when this disposition is to be left unanswered (and counts it). */
  takes(): boolean {
    if (!this.#holding) return false;
    this.#held++;
    return true;
  }
}
