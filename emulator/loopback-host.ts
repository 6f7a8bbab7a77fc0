// The HTTP side of the emulator answers only requests addressed to loopback. Binding 127.0.0.1 keeps other
// machines out, but not a web page: through DNS rebinding (attacker.test resolving to 127.0.0.1) a browser
// sends same-origin requests to our port with `Host: attacker.test`, and a local reverse proxy or SSH tunnel
// forwards remote callers with their own Host and an X-Forwarded-For. A request must name a loopback host
// (localhost, 127.0.0.0/8, [::1], with any port) and carry no forwarding header.

import type { IncomingMessage } from 'node:http';

export interface HostRefusal {
  status: 421 | 403;
  reason: string;
}

const FORWARDING_HEADERS = /^(forwarded|x-forwarded-.+)$/i;

export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase();
  let name: string;
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(h);
  if (bracketed) {
    name = bracketed[1]!;
    return name === '::1' || name === '0:0:0:0:0:0:0:1';
  }
  const m = /^([^:]+)(?::(\d{1,5}))?$/.exec(h);
  if (!m) return false;
  name = m[1]!;
  if (name === 'localhost' || name === 'localhost.') return true;
  const octets = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name);
  return !!octets && octets.slice(1).every((o) => Number(o) <= 255);
}

/** Why this request is refused, or undefined when it may go on. */
export function refuseNonLoopback(req: IncomingMessage): HostRefusal | undefined {
  for (const name of Object.keys(req.headers)) {
    if (FORWARDING_HEADERS.test(name)) {
      return {
        status: 403,
        reason: `Forwarded requests are refused: the emulator serves this machine only (${name} header).`,
      };
    }
  }
  const host = req.headers.host;
  if (typeof host !== 'string' || !isLoopbackHost(host)) {
    return {
      status: 421,
      reason:
        'The Host header must name a loopback address (localhost, 127.0.0.1, [::1]); the emulator serves this machine only.',
    };
  }
  return undefined;
}
