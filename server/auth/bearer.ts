// Bearer tokens of external systems (a service principal's client-credentials token): verified against the
// provider's published keys (JWKS), issuer, audience and expiry, then read as a 'service' Principal with the
// token's `roles` claim. Only app-only tokens qualify: a user's id token or delegated access token for the same
// client carries the same audience and must not turn a person into a service principal.
import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { z } from 'zod';
import type { Principal } from './principal.ts';
import { printableName } from './printable.ts';
import type { ProviderConfig } from './config.ts';
import { discover } from './discovery.ts';
import { providerFetch } from './providerFetch.ts';
import { log } from '../log.ts';

/** Leeway for clocks that disagree a little; expiry is otherwise exact. */
const CLOCK_TOLERANCE_SECONDS = 60;

const keySets = new Map<string, JWTVerifyGetKey>();

/** The issuers a bearer token may carry: the configured one, discovery's (Entra names the tenant by id there,
 * also when it is configured by domain name) and, for Entra, the v1 form of discovery's tenant. */
export async function bearerIssuers(provider: ProviderConfig): Promise<string[]> {
  const issuers = new Set([provider.issuer, ...provider.extraBearerIssuers]);
  // Only Entra's own discovery may widen the list; a plain OpenID provider's issuer is the configured one.
  if (provider.tenantId !== undefined) {
    const discovered = (await discover(provider)).issuer;
    issuers.add(discovered);
    const tenant = /^https:\/\/[^/]+\/([0-9a-f-]{36})\/v2\.0$/i.exec(discovered)?.[1];
    if (tenant) issuers.add(`https://sts.windows.net/${tenant}/`);
  }
  return [...issuers];
}

async function keySetFor(provider: ProviderConfig): Promise<JWTVerifyGetKey> {
  const jwksUri = (await discover(provider)).jwks_uri;
  let set = keySets.get(jwksUri);
  if (!set) {
    // jose caches the key set and refetches it (rate limited) when a token names an unknown key id.
    set = createRemoteJWKSet(new URL(jwksUri), { [customFetch]: providerFetch });
    keySets.set(jwksUri, set);
  }
  return set;
}

const stringList = z.array(z.string()).catch([]);

export interface BearerOptions {
  /** Clock override for tests. */
  now?: Date;
}

/** The service principal of a bearer token; null for any token that does not verify or is not app-only. */
export async function principalFromBearer(
  token: string,
  provider: ProviderConfig,
  options: BearerOptions = {},
): Promise<Principal | null> {
  if (!/^[\w-]+\.[\w-]+\.[\w-]+$/.test(token)) return null;
  let payload: JWTPayload;
  try {
    const keys = await keySetFor(provider);
    ({ payload } = await jwtVerify(token, keys, {
      issuer: await bearerIssuers(provider),
      audience: provider.bearerAudiences,
      requiredClaims: ['exp', 'sub'],
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'],
      ...(options.now ? { currentDate: options.now } : {}),
    }));
  } catch (err) {
    // The reason (expired, wrong audience, bad signature) helps whoever wires up the external system; the
    // token itself is a credential and is never logged.
    if (err instanceof errors.JOSEError) log.info({ reason: err.code }, 'bearer token refused');
    else log.warn({ reason: err instanceof Error ? err.message : String(err) }, 'bearer token could not be checked');
    return null;
  }
  const clientId = firstString(payload.client_id, payload.azp, payload.appid);
  const appOnly =
    clientId !== undefined &&
    payload.nonce === undefined &&
    // RFC 9068 client-credentials tokens name the client as subject; Entra's app-only tokens have sub === oid.
    (payload.sub === clientId || (typeof payload.oid === 'string' && payload.sub === payload.oid));
  if (!appOnly) {
    log.info({ reason: 'not an app-only (client credentials) token' }, 'bearer token refused');
    return null;
  }
  return {
    kind: 'service',
    id: clientId,
    // The name is the token's own claim: shown in trails and the audit log, it must not reorder or hide text.
    name: printableName(firstString(payload.app_displayname, payload.client_name) ?? clientId),
    roles: stringList.parse(payload.roles),
    groups: stringList.parse(payload.groups),
  };
}

function firstString(...values: unknown[]): string | undefined {
  for (const v of values) if (typeof v === 'string' && v !== '') return v;
  return undefined;
}
