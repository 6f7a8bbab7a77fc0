// HTTPS requests from the console to the identity provider (discovery, JWKS, token endpoint), with the option of
// trusting one extra CA (NIMBUS_AUTH_CA_FILE) for providers behind a private CA - and for the tests' provider,
// which serves a self-signed certificate because MSAL refuses any authority that is not https. Node's fetch
// cannot be given a CA per request without undici (not a dependency), so this uses node:https directly.
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';

/** Largest provider answer read (discovery documents and key sets are a few KB). */
const MAX_BODY_BYTES = 1024 * 1024;
const TIMEOUT_MS = 10_000;

export interface ProviderResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const caCache = new Map<string, string>();
function caFrom(file: string | undefined): string | undefined {
  if (!file) return undefined;
  let pem = caCache.get(file);
  if (pem === undefined) {
    pem = readFileSync(file, 'utf8');
    caCache.set(file, pem);
  }
  return pem;
}

/** The CA file configured for the provider, if any (read from the environment so every caller agrees). */
export function providerCaFile(env: Record<string, string | undefined> = process.env): string | undefined {
  const v = env.NIMBUS_AUTH_CA_FILE?.trim();
  return v ? v : undefined;
}

export function providerRequest(
  url: string,
  init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string; caFile?: string } = {},
): Promise<ProviderResponse> {
  const target = new URL(url);
  const ca = caFrom(init.caFile ?? providerCaFile());
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: init.method ?? 'GET',
        headers: { accept: 'application/json', ...init.headers },
        timeout: TIMEOUT_MS,
        ...(ca && target.protocol === 'https:' ? { ca } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_BODY_BYTES) {
            req.destroy(new Error(`the identity provider's answer from ${target.origin} is larger than ${MAX_BODY_BYTES} bytes`));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
          resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`the identity provider at ${target.origin} did not answer in ${TIMEOUT_MS} ms`)));
    req.on('error', reject);
    if (init.body !== undefined) req.write(init.body);
    req.end();
  });
}

/** A fetch-compatible function over providerRequest, for libraries that take one (jose's key sets). */
export async function providerFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const url = input instanceof Request ? input.url : String(input);
  const headers: Record<string, string> = {};
  new Headers(init?.headers).forEach((v, k) => (headers[k] = v));
  const res = await providerRequest(url, {
    method: init?.method === 'POST' ? 'POST' : 'GET',
    headers,
    ...(typeof init?.body === 'string' ? { body: init.body } : {}),
  });
  return new Response(res.body, { status: res.status, headers: res.headers });
}
