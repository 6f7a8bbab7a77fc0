// The sign-in settings of the authorization tests that seal their own session cookies: `oidc` mode with an issuer
// nobody calls (the cookies are made with the session secret, no provider round trip), plus the test's role map.
export function oidcTestEnv(
  sessionSecret: string,
  roleMap?: { roles?: Record<string, string>; groups?: Record<string, string> },
): Record<string, string> {
  return {
    NIMBUS_AUTH: 'oidc',
    NIMBUS_AUTH_ISSUER: 'https://127.0.0.1:9/issuer',
    NIMBUS_AUTH_CLIENT_ID: 'nimbus-console',
    NIMBUS_AUTH_CLIENT_SECRET: 'not-used-here',
    NIMBUS_AUTH_REDIRECT_URI: 'http://127.0.0.1:3000/auth/callback',
    NIMBUS_AUTH_SESSION_SECRET: sessionSecret,
    ...(roleMap ? { NIMBUS_AUTH_ROLE_MAP: JSON.stringify(roleMap) } : {}),
  };
}

/**
 * The sign-in settings for a console that trusts the test identity provider (server/testing/oidcProvider.ts):
 * its issuer, CA and console client, bearer tokens for `bearerAudience`, and the test's role map.
 */
export function oidcProviderEnv(
  idp: { issuer: string; caFile: string; consoleClient: { id: string; secret: string } },
  o: {
    sessionSecret: string;
    bearerAudience: string;
    roleMap: { roles?: Record<string, string | string[]>; groups?: Record<string, string | string[]> };
  },
): Record<string, string> {
  return {
    NIMBUS_AUTH: 'oidc',
    NIMBUS_AUTH_ISSUER: idp.issuer,
    NIMBUS_AUTH_CLIENT_ID: idp.consoleClient.id,
    NIMBUS_AUTH_CLIENT_SECRET: idp.consoleClient.secret,
    NIMBUS_AUTH_REDIRECT_URI: 'http://127.0.0.1:1/auth/callback',
    NIMBUS_AUTH_SESSION_SECRET: o.sessionSecret,
    NIMBUS_AUTH_BEARER_AUDIENCE: o.bearerAudience,
    NIMBUS_AUTH_CA_FILE: idp.caFile,
    NIMBUS_AUTH_ROLE_MAP: JSON.stringify(o.roleMap),
  };
}
