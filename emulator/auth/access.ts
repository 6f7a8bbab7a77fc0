// Who may do what: SAS tokens checked against the shared access policies, and the grants a connection holds.
// The $cbs node turns a put-token into a Grant for the token's audience; each link then needs the right its
// work takes (a sender Send on the topic, a receiver Listen on the subscription, $management operations the
// right of the operation); the admin plane checks the Authorization header of every request for Manage.
// Scopes are compared as lower-case paths (entity names are case-insensitive); the host part of a resource is
// not compared (localhost and 127.0.0.1 name the same emulator). With `anonymous` every check passes, as
// before SAS existed; that switch is for old tests only.

import { timingSafeEqual } from 'node:crypto';
import type { AccessRight, PolicyStore } from './policies.ts';
import { parseSasToken, SasTokenError, signedWith } from './sas-token.ts';

export interface Grant {
  /** Lower-case entity path the grant covers, '' for the whole namespace. */
  scope: string;
  rights: ReadonlySet<AccessRight>;
  expiresAtMs: number;
}

/** A refusal, worded as Azure words it; `status` is what the HTTP plane and $cbs answer (always 401). */
export class AccessDenied extends Error {
  readonly status = 401;
  constructor(message: string) {
    super(message);
    this.name = 'AccessDenied';
  }
}

export interface AccessControl {
  /** Every check passes (the --allow-anonymous switch). */
  readonly anonymous: boolean;
  readonly policies: PolicyStore;
  /** A $cbs put-token: the grant the token gives for `audience`, or AccessDenied. */
  grantFor(token: unknown, audience: unknown): Grant;
  /**
   * Until when (ms since the epoch) one of the grants allows `right` on the entity path (as the client
   * addresses it): 0 = not allowed, Infinity = anonymous.
   */
  allowedUntil(grants: Iterable<Grant>, path: string, right: AccessRight): number;
  /** The admin plane: the request's Authorization header must give `right` on the request path. */
  authorizeHttp(header: string | undefined, requestPath: string, right: AccessRight): void;
  /** SASL PLAIN: a namespace policy name and one of its keys. */
  plainLoginValid(user: string, password: string): boolean;
}

/** The lower-case path of a resource URI or entity path: no scheme, host, query or surrounding slashes. */
export function resourcePath(resource: string): string {
  return resource
    .replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '')
    .replace(/[?#].*$/, '')
    .replace(/^\/+|\/+$/g, '')
    .toLowerCase();
}

export function covers(scope: string, path: string): boolean {
  return scope === '' || path === scope || path.startsWith(`${scope}/`);
}

function rightsOf(rights: readonly AccessRight[]): ReadonlySet<AccessRight> {
  // A Manage policy holds Send and Listen too (Azure refuses Manage without them).
  return new Set<AccessRight>(rights.includes('Manage') ? ['Manage', 'Send', 'Listen'] : rights);
}

export function unauthorizedClaim(right: AccessRight, resource: string): string {
  return `Unauthorized access. '${right}' claim(s) are required to perform this operation. Resource: '${resource.slice(0, 300)}'.`;
}

export function createAccessControl(options: {
  policies: PolicyStore;
  anonymous?: boolean;
  now?: () => number;
}): AccessControl {
  const { policies } = options;
  const anonymous = options.anonymous ?? false;
  const now = options.now ?? Date.now;

  function verify(tokenText: unknown): {
    scope: string;
    rights: ReadonlySet<AccessRight>;
    expiresAtMs: number;
  } {
    let token;
    try {
      token = parseSasToken(tokenText);
    } catch (err) {
      if (err instanceof SasTokenError) throw new AccessDenied(`${err.reason}: ${err.message}`);
      throw err;
    }
    const expiresAtMs = token.expiresAt * 1000;
    if (expiresAtMs <= now()) {
      throw new AccessDenied(
        `ExpiredToken: The token is expired. Expiration time: '${new Date(expiresAtMs).toISOString()}'.`,
      );
    }
    const scope = resourcePath(token.resource);
    // A namespace policy signs for anything; an entity policy only for its topic or queue and what lies under it.
    const entity = scope.split('/')[0] ?? '';
    const policy =
      policies.namespacePolicy(token.keyName) ??
      (entity === '' ? undefined : policies.entityPolicy(entity, token.keyName));
    // An unknown key name and a wrong key get the same answer: the caller learns nothing about which names exist.
    if (!policy || !(signedWith(token, policy.primaryKey) || signedWith(token, policy.secondaryKey))) {
      throw new AccessDenied('InvalidSignature: The token has an invalid signature.');
    }
    return { scope, rights: rightsOf(policy.rights), expiresAtMs };
  }

  return {
    anonymous,
    policies,
    grantFor(tokenText, audience) {
      if (anonymous) return { scope: '', rights: rightsOf(['Manage']), expiresAtMs: Infinity };
      const verified = verify(tokenText);
      const target =
        typeof audience === 'string' && audience !== '' ? resourcePath(audience) : verified.scope;
      if (!covers(verified.scope, target)) {
        throw new AccessDenied(
          `InvalidAudience: The token's resource does not cover '${String(audience).slice(0, 300)}'.`,
        );
      }
      return { ...verified, scope: target };
    },
    allowedUntil(grants, path, right) {
      if (anonymous) return Infinity;
      const target = resourcePath(path);
      const t = now();
      let until = 0;
      for (const g of grants) {
        if (g.expiresAtMs > t && g.expiresAtMs > until && covers(g.scope, target) && g.rights.has(right))
          until = g.expiresAtMs;
      }
      return until;
    },
    authorizeHttp(header, requestPath, right) {
      if (anonymous) return;
      if (header === undefined || header.trim() === '') {
        throw new AccessDenied('MissingToken: The authorization header was not found.');
      }
      const grant = verify(header.trim());
      if (!covers(grant.scope, resourcePath(requestPath)) || !grant.rights.has(right)) {
        throw new AccessDenied(unauthorizedClaim(right, requestPath));
      }
    },
    plainLoginValid(user, password) {
      if (anonymous) return true;
      const policy = policies.namespacePolicy(user);
      if (!policy) return false;
      return [policy.primaryKey, policy.secondaryKey].some((k) => constantTimeEqual(k, password));
    },
  };
}

function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
