// A DeliveryPort with no broker behind it, for the SDK's own unit tests of the Dispatcher (pure logic: the broker
// paths are tested on the embedded emulator in packages/sdk/e2e/). It holds one session's state, writes every
// settlement step as a short line in `log`, keeps every message that got out, and refuses a step the way a broker
// does when told to (`failOn`), so a test can run a delivery, break it part-way and run its redelivery on the state
// the first one left. One fake instead of a near-copy per test file: the copies had drifted (one refused only some
// steps, one logged the replay cursor), so the same scenario read differently from file to file.
// Not exported from `@nimbus/sdk/testing`: adapter authors test against a broker with the harness (harness.ts).
import { emptySessionState, Prop } from '../contract/index.ts';
import type { SessionState } from '../contract/index.ts';
import type { DeliveryPort } from '../dispatcher.ts';
import type { OutgoingMessage } from '../outbound.ts';

/** A message that got out: its MessageId and application properties. */
export interface SentMessage {
  messageId: string;
  props: Record<string, unknown>;
}

export interface FakeDeliveryPortOptions {
  /** The log line of a state write. Default `setState`. */
  stateLine?: (state: SessionState) => string;
  /** The log line of a send. Default `send <MessageType>`. */
  sendLine?: (message: OutgoingMessage) => string;
}

export class FakeDeliveryPort implements DeliveryPort {
  /** Every step that went through, in order: `setState`, `send <MessageType>`, `schedule`, `complete`, `deadLetter <reason>`. */
  log: string[] = [];
  /** Every message sent (not scheduled) that went through. */
  sent: SentMessage[] = [];
  state: SessionState;
  /** The broker refuses every step whose log line starts with this (it throws, and the step is not logged). */
  failOn: string | undefined;
  /** Set to report the delivery's lock as lost (DeliveryPort.lockLost). */
  lockLost?: () => boolean;
  readonly #stateLine: (state: SessionState) => string;
  readonly #sendLine: (message: OutgoingMessage) => string;

  constructor(state: SessionState = emptySessionState(), options: FakeDeliveryPortOptions = {}) {
    this.state = state;
    this.#stateLine = options.stateLine ?? (() => 'setState');
    this.#sendLine = options.sendLine ?? ((m) => `send ${String(m.applicationProperties[Prop.MessageType])}`);
  }

  async readState(): Promise<SessionState> {
    return this.state;
  }

  async writeState(state: SessionState): Promise<void> {
    this.#step(this.#stateLine(state));
    this.state = state;
  }

  async send(message: OutgoingMessage): Promise<void> {
    this.#step(this.#sendLine(message));
    this.sent.push({ messageId: message.messageId, props: message.applicationProperties });
  }

  async schedule(): Promise<void> {
    this.#step('schedule');
  }

  async complete(): Promise<void> {
    this.#step('complete');
  }

  async deadLetter(reason: string): Promise<void> {
    this.#step(`deadLetter ${reason}`);
  }

  /** `<MessageType> <MessageId>` of every message sent. */
  sentIds(): string[] {
    return this.sent.map((m) => `${String(m.props[Prop.MessageType])} ${m.messageId}`);
  }

  /** The DeferralSequence of every parked copy sent (To = Deferred). */
  parkedCopies(): unknown[] {
    return this.sent.filter((m) => m.props[Prop.To] === 'Deferred').map((m) => m.props[Prop.DeferralSequence]);
  }

  #step(line: string): void {
    if (this.failOn !== undefined && line.startsWith(this.failOn)) throw new Error(`broker refused ${line}`);
    this.log.push(line);
  }
}
