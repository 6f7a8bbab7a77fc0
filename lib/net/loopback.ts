// Loopback names and addresses, for servers that must only answer this machine: the console with sign-in off
// (server/auth/hardening.ts) and the embedded Cosmos server (lib/store/cosmos.ts). Pure functions.

/** The host name of a Host header value (`[::1]:3000` → `::1`, `Example.test:80` → `example.test`). */
export function hostNameOf(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return h.slice(1, end < 0 ? undefined : end);
  }
  const colon = h.lastIndexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
}

/** `localhost`, an address in 127.0.0.0/8, or `::1` (also as the IPv4-mapped `::ffff:127.x.y.z` a socket reports). */
export function isLoopbackName(name: string): boolean {
  const h = name.toLowerCase().replace(/^::ffff:/, '');
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const m = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(h);
  return m !== null && m.slice(1).every((o) => Number(o) <= 255);
}

/** Whether a Host header value names this machine by a loopback name or address. */
export const isLoopbackHostHeader = (host: string | null | undefined): boolean => host != null && isLoopbackName(hostNameOf(host));
