// The certificate of the optional AMQPS listener. Given as files (--cert/--key), or generated once into the
// data directory (or a temporary one) and reused. node:crypto makes keys but cannot issue an X.509
// certificate, so generation runs the `openssl` command line (part of every Debian/Ubuntu/macOS base system)
// instead of adding an npm dependency (selfsigned pulls node-forge) for a development-only feature.

import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  certPath: string;
  /** SHA-256 fingerprint, as `openssl x509 -fingerprint -sha256` prints it. */
  fingerprint: string;
  generated: boolean;
}

export const CERT_FILE = 'emulator-cert.pem';
export const KEY_FILE = 'emulator-key.pem';

/** Reads the given files, or the pair in `dir` (generating it there on first use). */
export function loadOrCreateCertificate(opts: {
  certPath?: string;
  keyPath?: string;
  dir?: string;
}): TlsMaterial {
  if (opts.certPath || opts.keyPath) {
    if (!opts.certPath || !opts.keyPath) throw new Error('--cert and --key go together.');
    return material(opts.certPath, opts.keyPath, false);
  }
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'nimbus-emulator-tls-'));
  mkdirSync(dir, { recursive: true });
  const certPath = join(dir, CERT_FILE);
  const keyPath = join(dir, KEY_FILE);
  if (existsSync(certPath) && existsSync(keyPath)) return material(certPath, keyPath, false);
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        keyPath,
        '-out',
        certPath,
        '-days',
        '825',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
      ],
      { stdio: 'ignore' },
    );
  } catch (err) {
    throw new Error(
      `Could not generate the emulator's TLS certificate with openssl (${err instanceof Error ? err.message : String(err)}); ` +
        'install openssl or pass --cert and --key.',
    );
  }
  chmodSync(keyPath, 0o600);
  return material(certPath, keyPath, true);
}

function material(certPath: string, keyPath: string, generated: boolean): TlsMaterial {
  const cert = readFileSync(certPath);
  const key = readFileSync(keyPath);
  return { cert, key, certPath, fingerprint: new X509Certificate(cert).fingerprint256, generated };
}
