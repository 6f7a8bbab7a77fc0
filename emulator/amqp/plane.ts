// The AMQP 1.0 data plane: a rhea container in server mode that accepts sockets handed over by the one-port
// server. It answers SASL (ANONYMOUS, or PLAIN with a namespace policy's name and key), the $cbs node (whose
// put-token is the only way a connection gets rights: see auth/access.ts), sender links on topics (Send),
// receiver links on subscriptions and their dead-letter queues (Listen), and each entity's $management node
// (the right of each operation). Everything a client can trigger is contained here: a failure in
// one handler closes at most that link or connection, never the process.

import type { Socket } from 'node:net';
import rhea from 'rhea';
import type { Message } from 'rhea';
import type { Broker, OpenReceiverOptions, ReceiveSource, SessionCaller } from '../broker/api.ts';
import { BrokerError } from '../broker/api.ts';
import type { ParsedEntity } from './codec.ts';
import { captureTypes, keepRawMessages, typedMessageId } from '../broker/typed-values.ts';
import {
  BATCH_FORMAT,
  decodeBatch,
  describeSource,
  encodedSize,
  encodeMessage,
  msToTicksBuffer,
  outcome,
  parseAddress,
  queueSource,
} from './codec.ts';
import { DeliveryLink, errorSummary } from './delivery-link.ts';
import type { DispositionHold } from './disposition-hold.ts';
import { createFrameGuard } from './frame-guard.ts';
import { guardDispositionRanges } from './disposition-range.ts';
import type { DispositionSide } from './disposition-range.ts';
import { coalesceWrites } from './write-coalescing.ts';
import { amqpConditionFor } from './errors.ts';
import type { PlaneLog } from './log.ts';
import type { AccessControl, Grant } from '../auth/access.ts';
import { AccessDenied, unauthorizedClaim } from '../auth/access.ts';
import type { AccessRight } from '../auth/policies.ts';
import { handleManagementRequest } from './management.ts';
import type {
  AmqpErrorFields,
  AttachFields,
  RheaConnection,
  RheaContext,
  RheaDelivery,
  RheaLink,
  RheaSession,
} from './rhea-types.ts';

/**
 * A link's max-message-size as its peer declared it at attach; undefined for 0 or absent (no limit), and for
 * a value past 2^53 (rhea hands those over as bytes; no reply comes near it).
 */
function maxMessageSizeOf(link: RheaLink | undefined): number | undefined {
  const v: unknown = link?.remote.attach?.max_message_size;
  return typeof v === 'number' && v > 0 ? v : undefined;
}

export interface AmqpPlaneOptions {
  broker: Broker;
  log: PlaneLog;
  /** SAS verification; every $cbs put-token and link is checked against it. */
  access: AccessControl;
  /** Our advertised idle timeout; rhea closes a connection silent for twice this. Default 60 s. */
  idleTimeoutMs?: number;
  /** A connection that has not completed the AMQP open within this time is dropped. Default 5 s. */
  handshakeTimeoutMs?: number;
  /** Longest wait for acceptNextSession when the client names none (com.microsoft:timeout). Default 60 s. */
  maxSessionWaitMs?: number;
  /** Caps on what one client can make the emulator hold (defaults: AMQP_LIMIT_DEFAULTS). */
  limits?: Partial<AmqpLimits>;
  /** Tests only: dispositions on receive links are left unanswered while it holds (startEmulator's testDispositionHold). */
  dispositionHold?: DispositionHold;
}

/**
 * What one client may make the emulator hold. Beyond a cap the new connection, session or link is refused with
 * `amqp:resource-limit-exceeded`, as Azure refuses them; a client that keeps opening refused sessions or links
 * without ending them (a few past the cap) loses its connection. The byte budget covers the deliveries a
 * connection is still assembling plus what is buffered for it to read: while its outgoing bytes fill the
 * budget, the emulator stops reading from it and stops sending it deliveries; incoming bytes past the budget
 * close the connection.
 */
export interface AmqpLimits {
  maxConnections: number;
  maxSessionsPerConnection: number;
  maxLinksPerSession: number;
  connectionBudgetBytes: number;
}

export const AMQP_LIMIT_DEFAULTS: AmqpLimits = {
  maxConnections: 1_000,
  maxSessionsPerConnection: 1_000,
  maxLinksPerSession: 256,
  // Above one delivery at the largest size assembled (MAX_INCOMPLETE_DELIVERY_BYTES), so a single oversized
  // message still gets its clean MessageSizeExceeded.
  connectionBudgetBytes: 64 * 1024 * 1024,
};

/** Refused sessions or links a client may leave un-ended before its connection is closed. */
const REFUSED_GRACE = 8;

export interface AmqpPlane {
  /** Take over a socket whose first bytes (already unshifted) are an AMQP protocol header. */
  accept(socket: Socket): void;
  readonly connectionCount: number;
  /** Bytes one connection holds now (deliveries being assembled + buffered output), for tests and metrics. */
  connectionBytes(): number[];
  close(): Promise<void>;
}

type LinkRole =
  | { kind: 'cbs-request' }
  | { kind: 'management-request'; entity: ParsedEntity }
  | { kind: 'send'; topic: string; authorizedUntil: number }
  | { kind: 'reply' }
  | { kind: 'deliver'; handler: DeliveryLink }
  | { kind: 'pending' }
  | { kind: 'refused-session'; error: AmqpErrorFields; fallback: NodeJS.Timeout };

interface ConnectionState {
  id: string;
  socket: Socket;
  connection: RheaConnection;
  /** Links the client reads replies from, by link name and by target address (its reply_to). */
  replyLinks: Map<string, RheaLink>;
  links: Set<RheaLink>;
  /** What $cbs put-token granted, by audience path (a renewal replaces the grant it renews). */
  grants: Map<string, Grant>;
  handshakeTimer?: NodeJS.Timeout;
  closed: boolean;
  /** Over maxConnections: closed with resource-limit-exceeded as soon as its open arrives. */
  overLimit: boolean;
  /** Sessions the client began and has not ended (refused ones included). */
  sessions: Set<RheaSession>;
  /** Links per session, refused ones included until the client detaches them. */
  linksPerSession: Map<RheaSession, number>;
  /** Bytes of deliveries being assembled, per receiving link. */
  incomplete: Map<unknown, number>;
  incompleteBytes: number;
  /** Reading is paused until the socket drains (its outgoing bytes filled the budget). */
  readPaused: boolean;
}

const SESSION_FILTER = 'com.microsoft:session-filter';
/** replyLinks key prefix for "the reply link attached to this node" (no valid link name or address has it). */
const NODE_KEY = '\u0000node:';
/**
 * A refused session attach waits this long for the client's own detach before the error detach goes out
 * unprompted (see refuseSessionAttach). The Service Bus client detaches within milliseconds; this only bounds
 * the wait for another client that never does.
 */
const REFUSED_SESSION_DETACH_FALLBACK_MS = 10_000;
/** Advertised in our open; peers split larger transfers, and a frame above it closes the connection. */
const MAX_FRAME_BYTES = 256 * 1024;
/**
 * Largest delivery assembled from several frames before the connection is dropped. Well above the message
 * size limit (at most 1 MiB), so that an oversized message still gets its clean MessageSizeExceeded
 * rejection; only a peer streaming without end is cut off.
 */
const MAX_INCOMPLETE_DELIVERY_BYTES = 16 * 1024 * 1024;
/** Grants one connection may hold; the oldest goes first (a client puts one per entity it uses). */
const MAX_GRANTS_PER_CONNECTION = 256;

export function createAmqpPlane(options: AmqpPlaneOptions): AmqpPlane {
  const { broker, log, access } = options;
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  const handshakeTimeoutMs = options.handshakeTimeoutMs ?? 5_000;
  const maxSessionWaitMs = options.maxSessionWaitMs ?? 60_000;
  const limits: AmqpLimits = { ...AMQP_LIMIT_DEFAULTS, ...options.limits };

  // Incoming messages keep the AMQP types of their properties and annotations (see typed-values.ts).
  keepRawMessages();
  const container = rhea.create_container({ id: 'nimbus-servicebus-emulator' });
  // ANONYMOUS is what the Service Bus client picks: its rights come from $cbs put-token, as on Azure. PLAIN
  // checks a namespace policy's name and key and grants nothing by itself (the connection still puts tokens).
  const mechanisms = container.sasl_server_mechanisms as {
    enable_anonymous(): void;
    enable_plain(cb: (user: string, password: string) => boolean): void;
  };
  mechanisms.enable_anonymous();
  mechanisms.enable_plain((user, password) => access.plainLoginValid(String(user), String(password)));
  // MSSBCBS ("claims-based security") is what Service Bus offers and what the uAMQP-based clients (Python,
  // C, older .NET) and Microsoft.Azure.Amqp ask for: authentication happens later through $cbs put-token,
  // so, like ANONYMOUS, it succeeds at once and grants nothing. EXTERNAL (identity from the transport) is
  // treated the same way: the emulator does not take identities from TLS client certificates.
  const cbsLike = (): { outcome: boolean | undefined; start(): void } => ({
    outcome: undefined,
    start() {
      this.outcome = true;
    },
  });
  const named = mechanisms as unknown as Record<string, () => unknown>;
  named.MSSBCBS = cbsLike;
  named.EXTERNAL = cbsLike;

  /** Until when the connection may exercise `right` on `path` (0: not at all). */
  function allowedUntil(state: ConnectionState, path: string, right: AccessRight): number {
    return access.allowedUntil(state.grants.values(), path, right);
  }

  function unauthorized(right: AccessRight, path: string): AmqpErrorFields {
    return { condition: 'amqp:unauthorized-access', description: unauthorizedClaim(right, path) };
  }

  const connections = new Map<RheaConnection, ConnectionState>();
  const roles = new WeakMap<RheaLink, LinkRole>();
  let nextConnectionId = 1;

  const activeConnections = (): number => {
    let n = 0;
    for (const c of connections.values()) if (!c.overLimit) n++;
    return n;
  };

  const stateOf = (ctx: RheaContext): ConnectionState | undefined => connections.get(ctx.connection);

  function guard(event: string, fn: (ctx: RheaContext) => void): void {
    container.on(event, (ctx: RheaContext) => {
      try {
        fn(ctx);
      } catch (err) {
        // A bug or a hostile frame in one handler must not take the process down: drop that connection.
        log.error({ event, err: errorSummary(err) }, 'amqp handler failed; closing the connection');
        const state = stateOf(ctx);
        if (state)
          abortConnection(state, { condition: 'amqp:internal-error', description: 'Internal error' });
      }
    });
  }

  function abortConnection(state: ConnectionState, error?: { condition: string; description: string }): void {
    try {
      if (!state.connection.is_closed()) state.connection.close(error);
    } catch {
      // The socket goes anyway.
    }
    setTimeout(() => state.socket.destroy(), 200).unref();
  }

  function cleanupConnection(state: ConnectionState): void {
    if (state.closed) return;
    state.closed = true;
    if (state.handshakeTimer) clearTimeout(state.handshakeTimer);
    for (const link of state.links) disposeLink(link);
    state.links.clear();
    state.replyLinks.clear();
    connections.delete(state.connection);
  }

  function disposeLink(link: RheaLink): void {
    const role = roles.get(link);
    if (role?.kind === 'deliver') role.handler.dispose();
    if (role?.kind === 'refused-session') clearTimeout(role.fallback);
    roles.delete(link);
  }

  // ---- connection lifecycle -------------------------------------------------------------------------------

  guard('connection_open', (ctx) => {
    const state = stateOf(ctx);
    if (state?.handshakeTimer) {
      clearTimeout(state.handshakeTimer);
      state.handshakeTimer = undefined;
    }
    if (state?.overLimit) {
      log.info({ connection: state.id }, 'connection over the limit; closing it');
      abortConnection(
        state,
        limitExceeded(`The emulator accepts at most ${limits.maxConnections} connections.`),
      );
    }
  });
  guard('connection_close', (ctx) => {
    const state = stateOf(ctx);
    if (state) cleanupConnection(state);
  });
  guard('disconnected', (ctx) => {
    const state = stateOf(ctx);
    if (state) cleanupConnection(state);
  });
  for (const event of [
    'connection_error',
    'session_error',
    'sender_error',
    'receiver_error',
    'protocol_error',
  ]) {
    container.on(event, (ctx: RheaContext | Error) => {
      const detail = ctx instanceof Error ? errorSummary(ctx) : { message: event };
      log.debug({ event, ...detail }, 'amqp peer error');
    });
  }
  container.on('error', (err: unknown) => {
    log.warn({ err: errorSummary(err) }, 'amqp connection error');
  });

  // rhea assembles a multi-frame delivery in memory before anyone sees it, and the size prefix of each
  // frame is checked elsewhere; what remains is a peer announcing `more` forever, on one link or on many.
  // Bound the bytes of the incomplete delivery per link and of all of them per connection (an instance-level
  // wrapper: rhea itself stays untouched).
  guard('session_open', (ctx) => {
    const state = stateOf(ctx);
    const session = ctx.session as unknown as RheaSession & {
      outgoing: DispositionSide;
      incoming: DispositionSide;
      on_transfer(frame: { performative: { handle: number; more?: boolean }; payload?: Buffer }): void;
      remote: { handles: Record<number, unknown> };
      close(error?: AmqpErrorFields): void;
    };
    if (!state || !session) return;
    state.sessions.add(session);
    guardDispositionRanges(session);
    const original = session.on_transfer.bind(session);
    // A refused session (and a connection being closed) assembles nothing: transfers on it are dropped.
    let refused = false;
    if (state.sessions.size > limits.maxSessionsPerConnection) {
      refused = true;
      session.on_transfer = () => undefined;
      if (state.sessions.size > limits.maxSessionsPerConnection + REFUSED_GRACE) {
        abortConnection(
          state,
          limitExceeded(`Too many sessions on one connection (at most ${limits.maxSessionsPerConnection}).`),
        );
        return;
      }
      session.close(
        limitExceeded(`A connection may have at most ${limits.maxSessionsPerConnection} sessions.`),
      );
      return;
    }
    session.on_transfer = (frame) => {
      if (refused || state.closed) return; // the connection is closing; assemble nothing more
      const link = session.remote.handles[frame.performative.handle];
      const before = state.incomplete.get(link) ?? 0;
      const size = frame.payload?.length ?? 0;
      if (frame.performative.more) {
        const total = before + size;
        if (total > MAX_INCOMPLETE_DELIVERY_BYTES) {
          refused = true;
          log.info(
            { connection: state.id, bytes: total },
            'delivery larger than the emulator accepts; closing the connection',
          );
          abortConnection(state, {
            condition: 'amqp:link:message-size-exceeded',
            description: `A delivery exceeded ${MAX_INCOMPLETE_DELIVERY_BYTES} bytes.`,
          });
          return;
        }
        if (state.incompleteBytes + size + state.socket.writableLength > limits.connectionBudgetBytes) {
          refused = true;
          log.info(
            { connection: state.id, bytes: state.incompleteBytes + size },
            'connection over its byte budget; closing it',
          );
          abortConnection(
            state,
            limitExceeded(
              `The connection holds more than ${limits.connectionBudgetBytes} bytes of unfinished deliveries and unread output.`,
            ),
          );
          return;
        }
        state.incomplete.set(link, total);
        state.incompleteBytes += size;
      } else if (before > 0) {
        state.incomplete.delete(link);
        state.incompleteBytes -= before;
        pumpAll(state); // deliveries held back for those bytes may go now
      }
      original(frame);
    };
  });

  guard('session_close', (ctx) => {
    const state = stateOf(ctx);
    if (!state || !ctx.session) return;
    state.sessions.delete(ctx.session);
    state.linksPerSession.delete(ctx.session);
    for (const link of [...state.links]) {
      if (link.session === ctx.session) {
        forgetIncomplete(state, link);
        disposeLink(link);
        state.links.delete(link);
      }
    }
  });

  function forgetIncomplete(state: ConnectionState, link: RheaLink): void {
    const bytes = state.incomplete.get(link);
    if (bytes !== undefined) {
      state.incomplete.delete(link);
      state.incompleteBytes -= bytes;
    }
  }

  /**
   * Counts a link the client attached against its session's cap. False (and the link refused, or the
   * connection closed when the client ignores refusals) when the session already has maxLinksPerSession.
   */
  function admitLink(state: ConnectionState, link: RheaLink): boolean {
    const count = (state.linksPerSession.get(link.session) ?? 0) + 1;
    state.linksPerSession.set(link.session, count);
    if (count <= limits.maxLinksPerSession) return true;
    if (count > limits.maxLinksPerSession + REFUSED_GRACE) {
      abortConnection(
        state,
        limitExceeded(`Too many links on one session (at most ${limits.maxLinksPerSession}).`),
      );
    } else {
      link.close(limitExceeded(`A session may have at most ${limits.maxLinksPerSession} links.`));
    }
    return false;
  }

  /** Bytes the connection's budget leaves for more output (deliveries wait while it is not positive). */
  function outgoingRoom(state: ConnectionState): number {
    return limits.connectionBudgetBytes - state.socket.writableLength - state.incompleteBytes;
  }

  function pumpAll(state: ConnectionState): void {
    for (const link of state.links) {
      const role = roles.get(link);
      if (role?.kind === 'deliver') role.handler.schedulePump();
    }
  }

  const onLinkClosed = (ctx: RheaContext): void => {
    const link = ctx.sender ?? ctx.receiver;
    const state = stateOf(ctx);
    if (!link || !state) return;
    const role = roles.get(link);
    // The client's detach of a refused session attach: our answering detach carries the error. rhea sends it
    // on the next tick; closing here, within the event, puts the error into that detach.
    if (role?.kind === 'refused-session') link.close(role.error);
    if (state.links.delete(link)) {
      const count = (state.linksPerSession.get(link.session) ?? 1) - 1;
      if (count > 0) state.linksPerSession.set(link.session, count);
      else state.linksPerSession.delete(link.session);
    }
    forgetIncomplete(state, link);
    disposeLink(link);
    for (const [key, value] of state.replyLinks) if (value === link) state.replyLinks.delete(key);
  };
  guard('sender_close', onLinkClosed);
  guard('receiver_close', onLinkClosed);

  // ---- links the client attaches ---------------------------------------------------------------------------

  // The client attaches a receiver: we are the sender (deliveries, or replies for $cbs / $management).
  guard('sender_open', (ctx) => {
    const link = ctx.sender!;
    const state = stateOf(ctx);
    if (!state) return;
    state.links.add(link);
    if (!admitLink(state, link)) return;
    const remote: AttachFields = link.remote.attach ?? { name: link.name };
    const sourceAddress = remote.source?.address;
    link.local.attach.snd_settle_mode = remote.snd_settle_mode ?? 0;
    link.local.attach.rcv_settle_mode = remote.rcv_settle_mode ?? 0;
    link.set_target(remote.target ?? null);
    const parsed = parseAddress(sourceAddress);
    if (parsed?.kind === 'cbs' || parsed?.kind === 'management') {
      // Replies go out pre-settled: a reply needs no acknowledgement, and the client's acknowledgement (a lone
      // disposition frame the broker never answers) left the client's next frame - typically the session
      // receiver's attach right after a $cbs put-token - waiting in its Nagle buffer for our delayed TCP ACK,
      // about 40 ms on every acceptNextSession. The client's socket has no TCP_NODELAY and we cannot set it.
      link.local.attach.snd_settle_mode = 1;
      link.set_source({ address: sourceAddress });
      roles.set(link, { kind: 'reply' });
      state.replyLinks.set(link.name, link);
      const targetAddress = remote.target?.address;
      if (targetAddress) state.replyLinks.set(targetAddress, link);
      // Clients that send no reply-to (uAMQP's $cbs and management requests) read the reply on the link
      // they attached to the node itself, as Service Bus answers them.
      if (sourceAddress) state.replyLinks.set(NODE_KEY + sourceAddress.toLowerCase(), link);
      return;
    }
    // A receiver on a bare name reads a queue (a topic has nothing to receive: the broker says not found).
    const source =
      parsed?.kind === 'subscription'
        ? parsed.source
        : parsed?.kind === 'topic'
          ? queueSource(parsed.topic)
          : undefined;
    if (!source) {
      link.set_source(remote.source ?? null);
      link.close(notFound(sourceAddress));
      return;
    }
    link.set_source(remote.source ?? null);
    holdAttach(link);
    roles.set(link, { kind: 'pending' });
    openDeliveryLink(state, link, source, remote).catch((err: unknown) => {
      log.error({ entity: describeSource(source), err: errorSummary(err) }, 'receiver attach failed');
      try {
        // A held attach must go out before the detach can (see holdAttach).
        releaseAttach(link);
        link.close({ condition: 'amqp:internal-error', description: 'Internal error' });
      } catch {
        abortConnection(state);
      }
    });
  });

  async function openDeliveryLink(
    state: ConnectionState,
    link: RheaLink,
    source: ReceiveSource,
    remote: AttachFields,
  ): Promise<void> {
    const filter = remote.source?.filter ?? undefined;
    const wantsSession = !!filter && Object.prototype.hasOwnProperty.call(filter, SESSION_FILTER);
    const opts: OpenReceiverOptions = {
      source,
      mode: remote.snd_settle_mode === 1 ? 'receiveAndDelete' : 'peekLock',
      name: link.name,
    };
    if (wantsSession) {
      const requested = filter![SESSION_FILTER];
      const clientTimeout = Number(remote.properties?.['com.microsoft:timeout']);
      const wait = Number.isFinite(clientTimeout) && clientTimeout > 0 ? clientTimeout : maxSessionWaitMs;
      opts.session = {
        sessionId: typeof requested === 'string' ? requested : null,
        // Answer a little before the client gives up on the attach, so it sees our timeout, not its own. The
        // client already sent its timeout less a margin; a flat second off made a 1 s timeout (a multi-session
        // host polling for work) an immediate refusal, and its loops spun on acceptNextSession.
        timeoutMs: Math.max(0, Math.min(maxSessionWaitMs, wait - Math.min(1_000, Math.ceil(wait / 10)))),
      };
    }
    let receiver;
    try {
      if (allowedUntil(state, describeSource(source), 'Listen') <= Date.now()) {
        throw new AccessDenied(unauthorizedClaim('Listen', describeSource(source)));
      }
      receiver = await broker.openReceiver(opts);
    } catch (err) {
      if (!linkStillWanted(state, link)) return;
      const error =
        err instanceof AccessDenied
          ? { condition: 'amqp:unauthorized-access', description: err.message }
          : amqpConditionFor(err, describeSource(source));
      releaseAttach(link);
      if (wantsSession) {
        link.set_source({ address: remote.source ? describeSource(source) : undefined });
        refuseSessionAttach(link, error);
      } else {
        link.close(error);
      }
      log.debug({ entity: describeSource(source), err: errorSummary(err) }, 'receiver attach refused');
      return;
    }
    if (!linkStillWanted(state, link)) {
      receiver.close();
      return;
    }
    const handler = new DeliveryLink(
      broker,
      link,
      source,
      receiver,
      log,
      () => outgoingRoom(state),
      options.dispositionHold,
    );
    roles.set(link, { kind: 'deliver', handler });
    if (wantsSession) {
      link.set_source({ ...(remote.source ?? {}), filter: { [SESSION_FILTER]: receiver.sessionId ?? null } });
      link.local.attach.properties = {
        ...(link.local.attach.properties ?? {}),
        'com.microsoft:locked-until-utc': rhea.types.wrap_long(
          msToTicksBuffer(receiver.sessionLockedUntil ?? Date.now()),
        ),
      };
    }
    releaseAttach(link);
    log.debug({ entity: describeSource(source), session: receiver.sessionId }, 'receiver attached');
    handler.schedulePump();
  }

  /**
   * A session receiver's attach is answered without a session, and the error detach is held back until the
   * client detaches. The client (MessageSession.createRheaLink) reads an attach without the session it asked
   * for as "no session", closes the link, and reports the error of the detach that answers its close; an error
   * detach that is already processed when it starts closing is lost, and it reports SessionCannotBeLocked
   * instead of MessagingEntityNotFound / MessagingEntityDisabled / ServiceTimeout. Whether attach and detach
   * arrived in one read decided that before (with Nagle's algorithm the detach always came ~40 ms later);
   * answering the client's detach makes the order certain.
   */
  function refuseSessionAttach(link: RheaLink, error: AmqpErrorFields): void {
    const fallback = setTimeout(() => {
      if (roles.get(link)?.kind === 'refused-session' && !link.is_closed()) link.close(error);
    }, REFUSED_SESSION_DETACH_FALLBACK_MS);
    fallback.unref();
    roles.set(link, { kind: 'refused-session', error, fallback });
  }

  function linkStillWanted(state: ConnectionState, link: RheaLink): boolean {
    return !state.closed && state.links.has(link) && !link.is_closed();
  }

  // The client attaches a sender: we receive (messages, $cbs requests, $management requests).
  guard('receiver_open', (ctx) => {
    const link = ctx.receiver!;
    const state = stateOf(ctx);
    if (!state) return;
    state.links.add(link);
    if (!admitLink(state, link)) return;
    const remote: AttachFields = link.remote.attach ?? { name: link.name };
    const address = remote.target?.address;
    link.set_source(remote.source ?? null);
    link.set_target(remote.target ?? null);
    const parsed = parseAddress(address);
    if (parsed?.kind === 'cbs') {
      roles.set(link, { kind: 'cbs-request' });
    } else if (parsed?.kind === 'management') {
      roles.set(link, { kind: 'management-request', entity: parsed.entity });
    } else if (parsed?.kind === 'topic') {
      const authorizedUntil = allowedUntil(state, parsed.topic, 'Send');
      if (authorizedUntil <= Date.now()) {
        link.close(unauthorized('Send', parsed.topic));
        return;
      }
      link.local.attach.max_message_size = broker.maxMessageSizeBytes;
      roles.set(link, { kind: 'send', topic: parsed.topic, authorizedUntil });
    } else if (parsed?.kind === 'subscription') {
      link.close({
        condition: 'amqp:not-allowed',
        description: `Cannot send to '${address}': send to the topic.`,
      });
    } else {
      link.close(notFound(address));
    }
  });

  guard('message', (ctx) => {
    const link = ctx.receiver;
    const state = stateOf(ctx);
    const delivery = ctx.delivery;
    if (!link || !state || !delivery) return;
    const role = roles.get(link);
    switch (role?.kind) {
      case 'send':
        if (role.authorizedUntil <= Date.now()) {
          // The token the link was attached under expired; a renewed one (put-token again) carries it on.
          role.authorizedUntil = allowedUntil(state, role.topic, 'Send');
          if (role.authorizedUntil <= Date.now()) {
            const error = unauthorized('Send', role.topic);
            delivery.update(true, outcome.rejected(error));
            link.close(error);
            return;
          }
        }
        onSend(role.topic, ctx, delivery);
        return;
      case 'cbs-request':
        delivery.update(true, outcome.accepted());
        onCbs(state, captureTypes(ctx.message as Message), link.remote.attach?.target?.address ?? '$cbs');
        return;
      case 'management-request': {
        delivery.update(true, outcome.accepted());
        const request = captureTypes(ctx.message as Message);
        const node = link.remote.attach?.target?.address ?? '';
        const right = rightForManagement(request.application_properties?.operation);
        const path = `${role.entity.kind === 'topic' ? role.entity.topic : describeSource(role.entity.source)}/$management`;
        if (allowedUntil(state, path, right) <= Date.now()) {
          const error = unauthorized(right, path);
          respond(state, node, request, {
            statusCode: 401,
            statusDescription: error.description,
            errorCondition: rhea.types.wrap_symbol(error.condition),
          });
          return;
        }
        const reply = handleManagementRequest(
          broker,
          role.entity,
          request,
          (linkName) => sessionCallerOn(state, linkName),
          { maxBodyBytes: replyBodyBudget(replyLinkFor(state, node, request), request) },
        );
        const props: Record<string, unknown> = {
          statusCode: reply.statusCode,
          statusDescription: reply.statusDescription,
        };
        // Azure's key and type, as the .NET client (which casts it to AmqpSymbol) and azure-servicebus for
        // Python read it; core-amqp reads `error-condition` or else `errorCondition`. Sent as `error-condition`
        // before, .NET and Python saw no condition and mapped by status alone (Python: a plain ServiceBusError).
        if (reply.errorCondition) props.errorCondition = rhea.types.wrap_symbol(reply.errorCondition);
        respond(state, node, request, props, reply.body);
        return;
      }
      default:
        delivery.update(
          true,
          outcome.rejected({ condition: 'amqp:not-allowed', description: 'Unexpected transfer' }),
        );
    }
  });

  /**
   * Who a $management request on this connection speaks for, for the session operations. Azure ties a session
   * lock to the receiver link that accepted it, and the clients name that link in `associated-link-name`: only
   * that link's receiver counts. A request that names no link (a client that sends none, as the .NET client
   * does while its receiver link is down) counts for the receivers on its own connection: never for another
   * connection's, so no client can renew or read a session someone else holds.
   */
  function sessionCallerOn(state: ConnectionState, linkName: string | undefined): SessionCaller {
    return (holder) => {
      for (const link of state.links) {
        const role = roles.get(link);
        if (role?.kind !== 'deliver' || link.is_closed()) continue;
        if (linkName !== undefined && link.name !== linkName) continue;
        if (role.handler.receiver === holder) return true;
      }
      return false;
    };
  }

  function onSend(topic: string, ctx: RheaContext, delivery: RheaDelivery): void {
    const max = broker.maxMessageSizeBytes;
    let messages: Message[];
    try {
      if (ctx.format === BATCH_FORMAT) {
        const raw = ctx.message as Buffer;
        if (raw.length > max) throw tooLarge(raw.length, max);
        messages = decodeBatch(raw);
      } else if (ctx.format === undefined || ctx.format === 0) {
        const msg = captureTypes(ctx.message as Message);
        const size = encodedSize(msg);
        if (size > max) throw tooLarge(size, max);
        messages = [msg];
      } else {
        throw new BrokerError('BadRequest', `Unsupported message format ${ctx.format}`);
      }
      for (const m of messages) {
        // The client needs a message id on every received message; Azure assigns one when the sender gave none.
        if (m.message_id === undefined || m.message_id === null) m.message_id = rhea.generate_uuid();
      }
    } catch (err) {
      reject(err instanceof BrokerError ? amqpConditionFor(err, topic) : decodeError());
      return;
    }
    try {
      broker.send(topic, messages);
    } catch (err) {
      // Past decoding, a failure is the emulator's (its disk refused the journal write, say): internal-error,
      // which the client retries. It used to be answered as decode-error, which the client never retries.
      reject(amqpConditionFor(err, topic));
      if (!(err instanceof BrokerError) || err.code === 'InternalError')
        log.warn({ entity: topic, err: String(err) }, 'send failed in the emulator');
      return;
    }
    delivery.update(true, outcome.accepted());
    log.debug({ entity: topic, count: messages.length }, 'messages sent');

    function reject(error: AmqpErrorFields): void {
      delivery.update(true, outcome.rejected(error));
      log.debug({ entity: topic, condition: error.condition }, 'send rejected');
    }
  }

  function decodeError(): AmqpErrorFields {
    return { condition: 'amqp:decode-error', description: 'The message could not be decoded.' };
  }

  function onCbs(state: ConnectionState, request: Message, node: string): void {
    // The token is verified (signature, expiry, the policy's rights) and never logged.
    const operation = request.application_properties?.operation;
    if (operation !== 'put-token') {
      respond(state, node, request, {
        'status-code': 400,
        'status-description': `Unsupported $cbs operation '${String(operation).slice(0, 60)}'`,
      });
      return;
    }
    const audience = request.application_properties?.name;
    let grant: Grant;
    try {
      grant = access.grantFor(request.body, audience);
    } catch (err) {
      const description = err instanceof AccessDenied ? err.message : 'The token could not be verified.';
      log.info({ connection: state.id }, 'put-token refused');
      respond(state, node, request, { 'status-code': 401, 'status-description': description });
      return;
    }
    state.grants.delete(grant.scope);
    if (state.grants.size >= MAX_GRANTS_PER_CONNECTION) {
      const oldest = state.grants.keys().next().value;
      if (oldest !== undefined) state.grants.delete(oldest);
    }
    state.grants.set(grant.scope, grant);
    respond(state, node, request, { 'status-code': 202, 'status-description': 'Accepted' });
  }

  /** The link a request's reply goes on: its reply-to's, or without one the link the client attached to the node. */
  function replyLinkFor(state: ConnectionState, node: string, request: Message): RheaLink | undefined {
    const replyTo = request.reply_to;
    return replyTo ? state.replyLinks.get(replyTo) : state.replyLinks.get(NODE_KEY + node.toLowerCase());
  }

  /**
   * A reply to `request`, with correlation-id = the request's message-id in its own AMQP type (ulong, uuid,
   * binary or string: clients compare typed values).
   */
  function replyMessage(request: Message, props: Record<string, unknown>, body?: unknown): Message {
    const replyTo = request.reply_to;
    const correlationId = typedMessageId(request);
    // Service Bus sends the status as an AMQP int; uAMQP reads it with amqpvalue_get_int and rejects a uint.
    const typed = { ...props };
    for (const key of ['status-code', 'statusCode']) {
      const v = typed[key];
      if (typeof v === 'number') typed[key] = rhea.types.wrap_int(v);
    }
    return {
      ...(replyTo ? { to: replyTo } : {}),
      ...(correlationId !== undefined && correlationId !== null ? { correlation_id: correlationId } : {}),
      application_properties: typed,
      body: body ?? null,
    } as Message;
  }

  /**
   * The bytes a reply body may take on `link`: its max-message-size (declared by the client at attach; 0 or
   * absent is no limit) less the rest of an OK reply to `request`. Undefined: no limit.
   */
  function replyBodyBudget(link: RheaLink | undefined, request: Message): number | undefined {
    const limit = maxMessageSizeOf(link);
    if (limit === undefined) return undefined;
    const envelope = encodeMessage(replyMessage(request, { statusCode: 200, statusDescription: 'OK' }));
    return Math.max(0, limit - envelope.length);
  }

  /**
   * Answers a $cbs or $management request as Service Bus does, on replyLinkFor's link. A reply larger than
   * the link's max-message-size is never sent: the client could not take it (AMQP has the receiver detach the
   * link) and its request would go unanswered. It gets an error reply that fits instead, or, if even that does
   * not fit, the link is detached with amqp:link:message-size-exceeded.
   */
  function respond(
    state: ConnectionState,
    node: string,
    request: Message,
    props: Record<string, unknown>,
    body?: unknown,
  ): void {
    const link = replyLinkFor(state, node, request);
    if (!link || !link.is_open()) {
      log.debug({ replyTo: request.reply_to, node }, 'no reply link for request');
      return;
    }
    let bytes = encodeMessage(replyMessage(request, props, body));
    const limit = maxMessageSizeOf(link);
    let tooLargeFor: AmqpErrorFields | undefined;
    if (limit !== undefined && bytes.length > limit) {
      const description = `The reply (${bytes.length} bytes) exceeds the reply link's max-message-size (${limit} bytes).`;
      log.info({ node, size: bytes.length, limit }, 'reply larger than its link takes');
      const cbs = 'status-code' in props;
      bytes = encodeMessage(
        replyMessage(
          request,
          cbs
            ? { 'status-code': 413, 'status-description': description }
            : {
                statusCode: 413,
                statusDescription: description,
                errorCondition: rhea.types.wrap_symbol('amqp:link:message-size-exceeded'),
              },
        ),
      );
      if (bytes.length > limit) tooLargeFor = { condition: 'amqp:link:message-size-exceeded', description };
    }
    // The reply goes out after the request's disposition (accepted), which rhea writes on its next tick:
    // uAMQP drops a reply that arrives before the confirmation of its request ("Did not receive send
    // confirmation for pending operation"), and Service Bus confirms first too.
    setImmediate(() => {
      if (!link.is_open()) return;
      if (tooLargeFor) link.close(tooLargeFor);
      else link.send(bytes, undefined, 0);
    });
  }

  // ---- client outcomes on our deliveries ----------------------------------------------------------------

  for (const kind of ['accepted', 'rejected', 'modified', 'released'] as const) {
    guard(kind, (ctx) => {
      const link = ctx.sender;
      const role = link ? roles.get(link) : undefined;
      if (role?.kind === 'deliver' && ctx.delivery) role.handler.onOutcome(ctx.delivery, kind);
    });
  }
  const pumpFor = (ctx: RheaContext): void => {
    const link = ctx.sender;
    const role = link ? roles.get(link) : undefined;
    if (role?.kind === 'deliver') role.handler.schedulePump();
  };
  guard('sendable', pumpFor);
  guard('sender_flow', pumpFor);
  guard('sender_draining', pumpFor);

  // ---- sockets ------------------------------------------------------------------------------------------

  return {
    accept(socket: Socket): void {
      const id = `amqp-${nextConnectionId++}`;
      const connection = container.create_connection({
        id,
        idle_time_out: idleTimeoutMs,
        max_frame_size: MAX_FRAME_BYTES,
        container_id: 'nimbus-servicebus-emulator',
        // Our own settlement handling: never auto-accept transfers and keep `modified` distinct from `released`.
        autoaccept: false,
        treat_modified_as_released: false,
        reconnect: false,
        properties: { product: 'nimbus-servicebus-emulator' },
      } as unknown as Parameters<typeof container.create_connection>[0]) as unknown as RheaConnection;
      const state: ConnectionState = {
        id,
        socket,
        connection,
        replyLinks: new Map(),
        links: new Set(),
        grants: new Map(),
        closed: false,
        overLimit: activeConnections() >= limits.maxConnections,
        sessions: new Set(),
        linksPerSession: new Map(),
        incomplete: new Map(),
        incompleteBytes: 0,
        readPaused: false,
      };
      connections.set(connection, state);
      state.handshakeTimer = setTimeout(() => {
        log.info({ connection: id }, 'connection did not open in time; closing');
        cleanupConnection(state);
        socket.destroy();
      }, handshakeTimeoutMs);
      state.handshakeTimer.unref();
      socket.on('error', () => {
        // rhea sees the error too; this listener only keeps an EPIPE/ECONNRESET from becoming uncaught.
      });
      const guard = createFrameGuard(MAX_FRAME_BYTES);
      socket.on('data', (chunk: Buffer) => {
        if (!guard.observe(chunk) && !socket.destroyed) {
          log.info(
            { connection: id },
            'frame larger than the advertised max-frame-size; closing the connection',
          );
          socket.destroy();
          return;
        }
        // A client that does not read what we send (replies, deliveries) gets no more of its requests read:
        // its bytes wait in the kernel, not in our memory, until the socket drains.
        if (!state.readPaused && socket.writableNeedDrain && outgoingRoom(state) <= 0) {
          state.readPaused = true;
          socket.pause();
        }
      });
      socket.on('drain', () => {
        if (state.readPaused) {
          state.readPaused = false;
          socket.resume();
        }
        pumpAll(state);
      });
      socket.once('close', () => {
        cleanupConnection(state);
        // rhea learns of a lost peer only from 'end'/'error'; a destroyed socket emits neither, and rhea's
        // idle timer would then keep the process alive. Tell it explicitly (idempotent in rhea).
        try {
          (connection as unknown as { _disconnected(): void })._disconnected();
        } catch {
          // already torn down
        }
      });
      // rhea reports undecodable input here, just before it ends the socket: answer with a framing error
      // while the socket is still writable, so the peer learns why.
      connection.on('error', (err: unknown) => {
        log.info({ connection: id, err: errorSummary(err) }, 'malformed AMQP input; closing the connection');
        closeWithFramingError(connection);
      });
      connection.on('protocol_error', (err: unknown) => {
        log.info({ connection: id, err: errorSummary(err) }, 'AMQP protocol error; closing the connection');
        closeWithFramingError(connection);
      });
      coalesceWrites(socket);
      connection.accept(socket);
    },
    get connectionCount(): number {
      return connections.size;
    },
    connectionBytes(): number[] {
      return [...connections.values()].map((c) => c.incompleteBytes + c.socket.writableLength);
    },
    async close(): Promise<void> {
      const all = [...connections.values()];
      for (const state of all) {
        try {
          if (!state.connection.is_closed()) {
            state.connection.close({
              condition: 'amqp:connection:forced',
              description: 'The emulator is shutting down',
            });
          }
        } catch {
          // ignore: destroyed below
        }
      }
      await new Promise((resolve) => setTimeout(resolve, all.length ? 50 : 0));
      for (const state of all) {
        cleanupConnection(state);
        state.socket.destroy();
      }
    },
  };
}

/**
 * rhea answers an attach as soon as the attach event returns. Receivers need the broker first (entity checks,
 * session locks), so we take back the pending local attach and send it later with releaseAttach().
 */
function holdAttach(link: RheaLink): void {
  link.state.local_open = false;
  link.state.open_requests = Math.max(0, link.state.open_requests - 1);
}

function releaseAttach(link: RheaLink): void {
  link.open();
}

interface ConnectionInternals {
  state: { local_open: boolean };
  transport: unknown;
  amqp_transport: unknown;
  open(): void;
  close(error: { condition: string; description: string }): void;
  _process(): void;
}

function closeWithFramingError(connection: RheaConnection): void {
  const c = connection as unknown as ConnectionInternals;
  try {
    // Only once the AMQP layer is active (not during SASL) can an open/close pair be written.
    const selected = (c.transport as { selected?: unknown } | undefined)?.selected;
    if (c.transport !== c.amqp_transport && selected !== c.amqp_transport) return;
    if (!c.state.local_open) c.open();
    c.close({ condition: 'amqp:connection:framing-error', description: 'Malformed AMQP frame' });
    c._process();
  } catch {
    // The socket is being ended by rhea anyway.
  }
}

/**
 * The right a $management operation takes, as on Azure: scheduling is sending, rule changes are management,
 * everything else (peek, lock renewal, settlement, session state) is receiving.
 */
function rightForManagement(operation: unknown): AccessRight {
  switch (operation) {
    case 'com.microsoft:schedule-message':
    case 'com.microsoft:cancel-scheduled-message':
      return 'Send';
    case 'com.microsoft:add-rule':
    case 'com.microsoft:remove-rule':
      return 'Manage';
    default:
      return 'Listen';
  }
}

function limitExceeded(description: string): AmqpErrorFields & { description: string } {
  return { condition: 'amqp:resource-limit-exceeded', description };
}

function notFound(address: string | undefined): { condition: string; description: string } {
  return {
    condition: 'amqp:not-found',
    description: `The messaging entity '${address ?? ''}' could not be found.`,
  };
}

function tooLarge(size: number, max: number): BrokerError {
  return new BrokerError(
    'MessageSizeExceeded',
    `The received message (size ${size} bytes) exceeds the limit (${max} bytes) currently allowed on the link.`,
  );
}

export type { RheaSession };
