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
