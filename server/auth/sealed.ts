// Authenticated encryption of small JSON values for cookies: AES-256-GCM with a key derived per purpose from one
// secret (HKDF-SHA256). The purpose is also bound as additional authenticated data, so a value sealed for one
// cookie never opens as another. Format: `v1.` + base64url(iv[12] | ciphertext | tag[16]).
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const keys = new Map<string, Buffer>();

function keyFor(secret: string, purpose: string): Buffer {
  const id = `${purpose}\0${secret}`;
  let key = keys.get(id);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', secret, 'nimbus-console', purpose, 32));
    // A console has one secret; the bound only matters for tests that use many.
    if (keys.size > 32) keys.clear();
    keys.set(id, key);
  }
  return key;
}

export function seal(value: unknown, secret: string, purpose: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyFor(secret, purpose), iv);
  cipher.setAAD(Buffer.from(purpose));
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return `${VERSION}.${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')}`;
}

/** The sealed value, or undefined when it is malformed, tampered with or sealed with another secret/purpose. */
export function openSealed(value: string, secret: string, purpose: string): unknown {
  const dot = value.indexOf('.');
  if (dot < 0 || value.slice(0, dot) !== VERSION) return undefined;
  const raw = Buffer.from(value.slice(dot + 1), 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES + 1) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyFor(secret, purpose), raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(purpose));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    const text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]);
    return JSON.parse(text.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
