// Shared access signature tokens, as Azure Service Bus issues and checks them:
//   SharedAccessSignature sr=<url-encoded resource>&sig=<url-encoded base64 HMAC>&se=<unix seconds>&skn=<key name>
// The signature is HMAC-SHA256 over "<sr as sent>\n<se>" with the policy's key (its text, not base64-decoded:
// that is what every Azure SDK signs). Field order is free (the admin client puts sig first).

import { createHmac, timingSafeEqual } from 'node:crypto';

export interface SasToken {
  /** The resource URI the token is scoped to, decoded (e.g. sb://127.0.0.1:5672/orders). */
  resource: string;
  /** sr exactly as it appeared in the token: the signed string starts with it. */
  signedResource: string;
  /** The base64 signature, decoded from its URL encoding. */
  signature: string;
  /** Expiry, seconds since the epoch. */
  expiresAt: number;
  keyName: string;
}

export class SasTokenError extends Error {
  /** Azure's error prefix: InvalidSignature, ExpiredToken, MissingToken, MalformedToken. */
  constructor(
    readonly reason: 'MalformedToken' | 'InvalidSignature' | 'ExpiredToken' | 'MissingToken',
    message: string,
  ) {
    super(message);
    this.name = 'SasTokenError';
  }
}

const PREFIX = 'SharedAccessSignature ';
/** Tokens are short; anything much longer is not one (and is not worth decoding). */
const MAX_TOKEN_LENGTH = 4096;

function decode(value: string, field: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    throw new SasTokenError('MalformedToken', `The token's ${field} is not valid percent-encoding.`);
  }
}

export function parseSasToken(text: unknown): SasToken {
  if (typeof text !== 'string' || text.trim() === '')
    throw new SasTokenError('MissingToken', 'No token was given.');
  if (text.length > MAX_TOKEN_LENGTH) throw new SasTokenError('MalformedToken', 'The token is too long.');
  if (!text.startsWith(PREFIX)) {
    throw new SasTokenError(
      'MalformedToken',
      "The token is not a shared access signature ('SharedAccessSignature sr=…').",
    );
  }
  const fields = new Map<string, string>();
  for (const pair of text.slice(PREFIX.length).trim().split('&')) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new SasTokenError('MalformedToken', 'The token is not a list of key=value pairs.');
    const key = pair.slice(0, at);
    if (fields.has(key))
      throw new SasTokenError('MalformedToken', `The token names '${key.slice(0, 10)}' twice.`);
    fields.set(key, pair.slice(at + 1));
  }
  const sr = fields.get('sr');
  const sig = fields.get('sig');
  const se = fields.get('se');
  const skn = fields.get('skn');
  if (sr === undefined || sig === undefined || se === undefined || skn === undefined) {
    throw new SasTokenError('MalformedToken', 'The token needs sr, sig, se and skn.');
  }
  if (!/^\d{1,12}$/.test(se))
    throw new SasTokenError('MalformedToken', 'The token expiry (se) is not a number.');
  return {
    resource: decode(sr, 'resource (sr)'),
    signedResource: sr,
    signature: decode(sig, 'signature (sig)'),
    expiresAt: Number(se),
    keyName: decode(skn, 'key name (skn)'),
  };
}

function hmac(key: string, text: string): Buffer {
  return createHmac('sha256', key).update(text, 'utf8').digest();
}

/** Whether the token was signed with this key (constant time in the signature). */
export function signedWith(token: SasToken, key: string): boolean {
  const expected = hmac(key, `${token.signedResource}\n${token.expiresAt}`);
  const given = Buffer.from(token.signature, 'base64');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A token for `resource`, as the Azure SDKs build it (tests and tools; the emulator itself only verifies). */
export function createSasToken(resource: string, keyName: string, key: string, expiresAt: number): string {
  const sr = encodeURIComponent(resource);
  const sig = encodeURIComponent(hmac(key, `${sr}\n${expiresAt}`).toString('base64'));
  return `${PREFIX}sr=${sr}&sig=${sig}&se=${expiresAt}&skn=${encodeURIComponent(keyName)}`;
}
