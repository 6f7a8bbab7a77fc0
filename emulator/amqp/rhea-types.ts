// The slice of rhea's runtime objects this plane touches. rhea's own typings cover the client side well but
// not the server-side internals we rely on (delivery.update on outgoing deliveries, link.local.attach,
// endpoint state), so we describe exactly what we use here and cast once at the boundary.

import type { Message } from 'rhea';

export interface AmqpErrorFields {
  condition: string;
  description?: string;
  info?: Record<string, unknown>;
}

export interface Terminus {
  address?: string;
  filter?: Record<string, unknown> | null;
  [k: string]: unknown;
}

export interface AttachFields {
  name: string;
  snd_settle_mode?: number;
  rcv_settle_mode?: number;
  source?: Terminus | null;
  target?: Terminus | null;
  max_message_size?: number;
  properties?: Record<string, unknown> | null;
}

export interface RheaDelivery {
  id: number;
  tag: Buffer | string;
  format?: number;
  settled: boolean;
  remote_settled: boolean;
  remote_state?: unknown;
  update(settled: boolean | undefined, state?: unknown): void;
  accept?(): void;
  reject?(error: AmqpErrorFields): void;
}

export interface RheaEndpointState {
  local_open: boolean;
  open_requests: number;
}

export interface RheaLink {
  name: string;
  credit: number;
  is_open(): boolean;
  is_closed(): boolean;
  is_sender(): boolean;
  sendable(): boolean;
  open(): void;
  close(error?: AmqpErrorFields): void;
  set_source(fields: Terminus | null): void;
  set_target(fields: Terminus | null): void;
  set_drained?(drained: boolean): void;
  send(msg: Message | Buffer, tag?: Buffer, format?: number): RheaDelivery;
  local: { attach: AttachFields & { source?: unknown; target?: unknown } };
  remote: { attach?: AttachFields };
  state: RheaEndpointState;
  session: RheaSession;
  connection: RheaConnection;
  _draining?: boolean;
  on(event: string, listener: (ctx: RheaContext) => void): void;
  add_credit?(credit: number): void;
}

export interface RheaSession {
  outgoing: { available(): number };
  connection: RheaConnection;
}

export interface RheaConnection {
  options: { id: string };
  socket?: { destroy(): void; end(): void };
  is_open(): boolean;
  is_closed(): boolean;
  close(error?: AmqpErrorFields): void;
  accept(socket: unknown): RheaConnection;
  on(event: string, listener: (ctx: RheaContext) => void): void;
}

export interface RheaContext {
  connection: RheaConnection;
  session?: RheaSession;
  sender?: RheaLink;
  receiver?: RheaLink;
  delivery?: RheaDelivery;
  message?: Message | Buffer;
  format?: number;
  error?: unknown;
}
