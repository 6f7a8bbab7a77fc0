// Where an alert channel may never send: the console's own servers on this machine, and link-local / cloud metadata
// addresses. The embedded Cosmos server and the Service Bus emulator listen on loopback and trust loopback callers
// (the emulator's admin plane with the namespace key in its connection string, Cosmos with its well-known key), and
// the console with sign-in off makes every loopback caller an Owner: a channel URL aimed at one of their ports turns
// the console's own POSTs into requests against them (server-side request forgery). A metadata address
// (169.254.169.254, fd00:ec2::254) hands out the host's cloud credentials. Checked on input (model.ts, the URL as
// written) and again at the connection (channels.ts: the addresses the host name resolves to when the notice is
// sent, since a name can point elsewhere by then).
import { BlockList, isIP } from 'node:net';
import { isLoopbackName, isUnspecifiedAddress } from '../../lib/net/loopback.ts';

/** Link-local and cloud metadata addresses: never a channel's target, on any port. */
const LINK_LOCAL = new BlockList();
LINK_LOCAL.addSubnet('169.254.0.0', 16, 'ipv4');
LINK_LOCAL.addSubnet('fe80::', 10, 'ipv6');
LINK_LOCAL.addAddress('fd00:ec2::254', 'ipv6');

/**
 * An address as `net` reports it, IPv4-mapped IPv6 as the IPv4 address it is: `::ffff:169.254.169.254`, and the
 * URL parser's `::ffff:a9fe:a9fe` for the same address.
 */
function plainAddress(address: string): string {
  const a = address.toLowerCase().replace(/^\[|\]$/g, '');
  const dotted = /^(?:0{0,4}:){0,5}:?ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(a);
  if (dotted) return dotted[1]!;
  const hex = /^(?:0{0,4}:){0,5}:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a);
  if (hex) {
    const [hi, lo] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
    return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
  }
  return a;
}

function isLinkLocal(address: string): boolean {
  const a = plainAddress(address);
  const family = isIP(a);
  return family !== 0 && LINK_LOCAL.check(a, family === 4 ? 'ipv4' : 'ipv6');
}

/** This machine: a loopback name or address, or the unspecified address (a connection to 0.0.0.0 or :: lands here). */
function isThisMachine(address: string): boolean {
  const a = plainAddress(address);
  return isLoopbackName(a) || isUnspecifiedAddress(a);
}

const portOf = (url: URL): number => (url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : url.protocol === 'http:' ? 80 : NaN);

/**
 * The ports of the console's own servers on this machine: the Cosmos endpoint and the Service Bus endpoint when they
 * are on loopback (the embedded ones; Azure's are not on this machine), and the console's own port (PORT, 3000).
 */
export function ownServerPorts(env: Record<string, string | undefined> = process.env): Set<number> {
  const ports = new Set<number>();
  const add = (u: string | undefined) => {
    if (!u || !URL.canParse(u)) return;
    const url = new URL(u);
    if (!isThisMachine(url.hostname)) return;
    const port = url.port !== '' ? Number(url.port) : url.protocol === 'sb:' || url.protocol === 'amqp:' ? 5672 : portOf(url);
    if (Number.isInteger(port)) ports.add(port);
  };
  add(env.NIMBUS_COSMOS_ENDPOINT);
  add(/(?:^|;)\s*Endpoint=([^;]+)/i.exec(env.NIMBUS_SERVICEBUS_CONNECTION_STRING ?? '')?.[1]?.trim());
  const consolePort = Number(env.PORT ?? 3000);
  if (Number.isInteger(consolePort) && consolePort > 0) ports.add(consolePort);
  return ports;
}

export const LINK_LOCAL_REFUSAL = 'a link-local or cloud metadata address (169.254.0.0/16, fe80::/10, fd00:ec2::254) is never an alert target';
export const OWN_SERVER_REFUSAL = "a port of the console's own servers on this machine (the embedded Cosmos, the Service Bus emulator, the console) is never an alert target";

/** Why a connection to this address and port is refused, or null: the check at the connection, after DNS. */
export function addressProblem(address: string, port: number, env: Record<string, string | undefined> = process.env): string | null {
  if (isLinkLocal(address)) return LINK_LOCAL_REFUSAL;
  if (isThisMachine(address) && ownServerPorts(env).has(port)) return OWN_SERVER_REFUSAL;
  return null;
}

/**
 * Why a target host and port as written are refused, or null: a literal address or `localhost` is checked as the
 * connection would be; another name is resolved only when sent (its addresses are checked then).
 */
export function hostProblem(host: string, port: number, env: Record<string, string | undefined> = process.env): string | null {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (isIP(plainAddress(h)) === 0 && h !== 'localhost') return null;
  return addressProblem(h === 'localhost' ? '127.0.0.1' : h, port, env);
}

/** hostProblem of a channel URL (the URL parser has read `http://2852039166/` as 169.254.169.254 already). */
export function urlTargetProblem(u: string, env: Record<string, string | undefined> = process.env): string | null {
  if (!URL.canParse(u)) return null;
  const url = new URL(u);
  return hostProblem(url.hostname, portOf(url), env);
}
