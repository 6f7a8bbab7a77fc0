// Loopback names and addresses, for servers that must only answer this machine: the console with sign-in off
// (server/auth/hardening.ts) and the embedded Cosmos server (lib/store/cosmos.ts). Pure functions.
import { BlockList, isIP } from 'node:net';

// Compared as addresses, not as text: IPv6 has many spellings of one address (`0::1`, `::0.0.0.1` and the full-zero
// form are all `::1`), and a resolver hands a literal back as written - a text match let a channel aimed at
// `0::1` past the alert targets' check (server/alerts/channelTarget.ts).
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
LOOPBACK.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');
const UNSPECIFIED = new BlockList();
UNSPECIFIED.addAddress('0.0.0.0', 'ipv4');
UNSPECIFIED.addAddress('::', 'ipv6');
UNSPECIFIED.addAddress('::ffff:0.0.0.0', 'ipv6');

const familyOf = (address: string): 'ipv4' | 'ipv6' | undefined => {
  const family = isIP(address);
  return family === 4 ? 'ipv4' : family === 6 ? 'ipv6' : undefined;
};

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
  const h = name.toLowerCase();
  if (h === 'localhost') return true;
  const family = familyOf(h);
  return family !== undefined && LOOPBACK.check(h, family);
}

/** The unspecified address in any spelling (`0.0.0.0`, `::`, `0::0`, `::ffff:0.0.0.0`): a connection to it lands here. */
export function isUnspecifiedAddress(address: string): boolean {
  const family = familyOf(address.toLowerCase());
  return family !== undefined && UNSPECIFIED.check(address.toLowerCase(), family);
}

/** Whether a Host header value names this machine by a loopback name or address. */
export const isLoopbackHostHeader = (host: string | null | undefined): boolean => host != null && isLoopbackName(hostNameOf(host));
