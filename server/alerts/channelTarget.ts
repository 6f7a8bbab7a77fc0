// Where an alert channel may never send: the console's own servers on this machine, and the cloud platforms' own
// endpoints. The embedded Cosmos server and the Service Bus emulator listen on loopback and trust loopback callers
// (the emulator's admin plane with the namespace key in its connection string, Cosmos with its well-known key), and
// the console with sign-in off makes every loopback caller an Owner: a channel URL aimed at one of their ports turns
// the console's own POSTs into requests against them (server-side request forgery). A platform address hands out
// the host's cloud credentials or speaks for the host (PLATFORM below). Checked on input (model.ts, the URL as
// written) and again at the connection (channels.ts: the addresses the host name resolves to when the notice is
// sent, since a name can point elsewhere by then), and for the channel list's flag on a stored channel (alertStore.ts
// refusedAtSend): every rule of where a notice may go is in this file, so the three cannot disagree.
import { BlockList, isIP } from 'node:net';
import { z } from 'zod';
import { isLoopbackName, isUnspecifiedAddress } from '../../lib/net/loopback.ts';

/**
 * The platform addresses: never a channel's target, on any port. Link-local holds the metadata service of AWS,
 * Azure (IMDS), GCP and Oracle at 169.254.169.254; the others are outside it and were let through before:
 * AWS's IPv6 metadata address, Azure's wireserver (the host's platform endpoint: VM agent, extensions, health,
 * which answers any VM on the host), Alibaba Cloud's metadata service.
 */
const PLATFORM = new BlockList();
PLATFORM.addSubnet('169.254.0.0', 16, 'ipv4');
PLATFORM.addSubnet('fe80::', 10, 'ipv6');
PLATFORM.addAddress('fd00:ec2::254', 'ipv6');
PLATFORM.addAddress('168.63.129.16', 'ipv4');
PLATFORM.addAddress('100.100.100.200', 'ipv4');

/**
 * Platform names refused as written: GCP's metadata server (`metadata.google.internal`, and `metadata` through the
 * VM's search domain). They resolve to 169.254.169.254 there, which the check at the connection refuses anyway;
 * refused by name too so that the 400 comes on input, where the address is not known yet.
 */
const PLATFORM_NAMES = new Set(['metadata.google.internal', 'metadata']);

/**
 * The AMQPS port of the Service Bus emulator: its TLS listener serves the same admin plane as the plain port (the
 * plain port serves AMQP and the admin plane both, and is the connection string's), and the connection string names
 * only the plain one. Which port that is comes from NIMBUS_EMULATOR_TLS_PORT: `npm start` sets it for its console to
 * the port its emulator listens on (`--tls-port 0` included); for an emulator started on its own with
 * `npm run emulator -- --tls-port P` it is set by hand. Unset, 5671 (the documented one, Azure's AMQPS port): a
 * console cannot ask an emulator it did not start. Refused on loopback whenever the Service Bus endpoint is on this
 * machine. Before, 5671 alone was refused, and an emulator on another TLS port was a channel's target.
 */
const DEFAULT_EMULATOR_TLS_PORT = 5671;
const tlsPortSetting = z
  .string()
  .trim()
  .regex(/^\d{1,5}$/)
  .transform(Number)
  .refine((n) => n > 0 && n <= 65535);

/** The emulator's AMQPS port (NIMBUS_EMULATOR_TLS_PORT; the console's configuration refuses a bad one on start). */
function emulatorTlsPort(env: Record<string, string | undefined>): number {
  const parsed = tlsPortSetting.safeParse(env.NIMBUS_EMULATOR_TLS_PORT);
  return parsed.success ? parsed.data : DEFAULT_EMULATOR_TLS_PORT;
}

/** Whether a host name as written is a platform name (PLATFORM_NAMES; any case, a trailing dot or not). */
export const isPlatformName = (host: string): boolean => PLATFORM_NAMES.has(host.trim().toLowerCase().replace(/\.$/, ''));

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

function isPlatformAddress(address: string): boolean {
  const a = plainAddress(address);
  const family = isIP(a);
  return family !== 0 && PLATFORM.check(a, family === 4 ? 'ipv4' : 'ipv6');
}

/** This machine: a loopback name or address, or the unspecified address (a connection to 0.0.0.0 or :: lands here). */
function isThisMachine(address: string): boolean {
  const a = plainAddress(address);
  return isLoopbackName(a) || isUnspecifiedAddress(a);
}

const portOf = (url: URL): number => (url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : url.protocol === 'http:' ? 80 : NaN);

/**
 * The ports of the console's own servers on this machine: the Cosmos endpoint and the Service Bus endpoint when they
 * are on loopback (the embedded ones; Azure's are not on this machine) with the emulator's AMQPS port
 * (emulatorTlsPort), and the console's own port (PORT, 3000).
 */
export function ownServerPorts(env: Record<string, string | undefined> = process.env): Set<number> {
  const ports = new Set<number>();
  const add = (u: string | undefined): boolean => {
    if (!u || !URL.canParse(u)) return false;
    const url = new URL(u);
    if (!isThisMachine(url.hostname)) return false;
    const port = url.port !== '' ? Number(url.port) : url.protocol === 'sb:' || url.protocol === 'amqp:' ? 5672 : portOf(url);
    if (Number.isInteger(port)) ports.add(port);
    return true;
  };
  add(env.NIMBUS_COSMOS_ENDPOINT);
  if (add(/(?:^|;)\s*Endpoint=([^;]+)/i.exec(env.NIMBUS_SERVICEBUS_CONNECTION_STRING ?? '')?.[1]?.trim())) ports.add(emulatorTlsPort(env));
  const consolePort = Number(env.PORT ?? 3000);
  if (Number.isInteger(consolePort) && consolePort > 0) ports.add(consolePort);
  return ports;
}

export const LINK_LOCAL_REFUSAL =
  "a link-local or cloud metadata address (169.254.0.0/16, fe80::/10, fd00:ec2::254, Azure's 168.63.129.16, Alibaba's 100.100.100.200, metadata.google.internal) is never an alert target";
export const OWN_SERVER_REFUSAL = "a port of the console's own servers on this machine (the embedded Cosmos, the Service Bus emulator and its AMQPS port, the console) is never an alert target";

/** Why a connection to this address and port is refused, or null: the check at the connection, after DNS. */
export function addressProblem(address: string, port: number, env: Record<string, string | undefined> = process.env): string | null {
  if (isPlatformAddress(address)) return LINK_LOCAL_REFUSAL;
  if (isThisMachine(address) && ownServerPorts(env).has(port)) return OWN_SERVER_REFUSAL;
  return null;
}

/**
 * Why a target host and port as written are refused, or null: a literal address or `localhost` is checked as the
 * connection would be, a platform name is refused; another name is resolved only when sent (its addresses are
 * checked then).
 */
export function hostProblem(host: string, port: number, env: Record<string, string | undefined> = process.env): string | null {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (isPlatformName(h)) return LINK_LOCAL_REFUSAL;
  if (isIP(plainAddress(h)) === 0 && h !== 'localhost') return null;
  return addressProblem(h === 'localhost' ? '127.0.0.1' : h, port, env);
}

/** hostProblem of a channel URL (the URL parser has read `http://2852039166/` as 169.254.169.254 already). */
export function urlTargetProblem(u: string, env: Record<string, string | undefined> = process.env): string | null {
  if (!URL.canParse(u)) return null;
  const url = new URL(u);
  return hostProblem(url.hostname, portOf(url), env);
}
