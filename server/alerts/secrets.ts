// Channel secrets (webhook URLs, header values, SMTP passwords) are stored encrypted with AES-256-GCM under a key
// from NIMBUS_ALERTS_KEY (32 bytes, base64 or hex), never in clear text and never sent back to a browser. Each value
// gets a fresh 12-byte IV; the GCM tag makes a tampered or wrongly keyed value fail to decrypt rather than decode
// to garbage. The key is read when needed, so a console without alert channels needs no key.
import { createCipheriv, createDecipheriv, randomBytes, type DecipherGCM } from 'node:crypto';

export const ALERTS_KEY_ENV = 'NIMBUS_ALERTS_KEY';

/** An encrypted value as stored: `v1:` + base64(iv ‖ tag ‖ ciphertext). */
export type Sealed = string;

export class SecretKeyError extends Error {
  override readonly name = 'SecretKeyError';
}

/** The key from the environment, or a SecretKeyError that names the variable (never its value). */
export function alertsKey(env: Record<string, string | undefined> = process.env): Buffer {
  const text = env[ALERTS_KEY_ENV]?.trim();
  if (!text) throw new SecretKeyError(`${ALERTS_KEY_ENV} is not set: channel secrets cannot be stored or read (set it to 32 random bytes, base64)`);
  const key = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) throw new SecretKeyError(`${ALERTS_KEY_ENV} must be 32 bytes (base64 or 64 hex digits)`);
  return key;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const DAMAGED = 'a stored channel secret is damaged (not a whole sealed value): enter it again';

export function seal(plain: string, key: Buffer): Sealed {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `v1:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
}

/**
 * The plain value, or a SecretKeyError that never quotes it: for a value too short to hold its IV and tag (damaged
 * in the store) as for one the key does not open - node's own TypeError from setting up the decipher would reach
 * the caller as a 500, and one damaged channel would fail every list of channels.
 */
export function unseal(sealed: Sealed, key: Buffer): string {
  if (!sealed.startsWith('v1:')) throw new SecretKeyError('a stored channel secret has an unknown format');
  const raw = Buffer.from(sealed.slice(3), 'base64');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new SecretKeyError(DAMAGED);
  let decipher: DecipherGCM;
  try {
    decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  } catch {
    throw new SecretKeyError(DAMAGED);
  }
  try {
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretKeyError(`a stored channel secret does not decrypt with ${ALERTS_KEY_ENV} (was the key changed?)`);
  }
}
