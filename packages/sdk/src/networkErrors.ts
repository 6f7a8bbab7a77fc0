// Recognises a network failure (the downstream system could not be reached or dropped the connection) among the
// errors a handler lets escape. Node's fetch reports every such failure as `TypeError: fetch failed` with the socket
// or DNS error as its cause, so a classifier that reads TypeError as "the message is malformed" would dead-letter
// a whole outage's worth of messages and break their sessions' order. The default permanent classifier asks this
// first. Decided by error codes (Node's errno codes, undici's connection codes) anywhere in the cause chain, and by
// the one fixed message Node's fetch uses; free message text never counts ("ECONNRESET is not a function" is a bug).
import { causeChain } from './errors.ts';

/**
 * Codes of connection-level failures: the network or the peer, never the arguments. undici's argument and
 * protocol-misuse codes (UND_ERR_INVALID_ARG, UND_ERR_NOT_SUPPORTED, ...) are deliberately absent: they are bugs.
 */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  // errno codes from net, tls and dns
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENETRESET',
  'EAI_AGAIN',
  'EAI_FAIL',
  'ENOTFOUND',
  // undici (Node's fetch): connection, socket and timeout failures
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'UND_ERR_INFO',
]);

/** The message Node's fetch gives every network failure (its cause, when present, carries the code). */
const FETCH_FAILED = 'fetch failed';

/** True when the error, or anything in its cause chain, is a network failure. */
export function isNetworkError(error: unknown): boolean {
  return causeChain(error).some(isNetworkErrorItself);
}

function isNetworkErrorItself(e: unknown): boolean {
  if (e == null || typeof e !== 'object') return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) return true;
  return e instanceof TypeError && e.message === FETCH_FAILED;
}
