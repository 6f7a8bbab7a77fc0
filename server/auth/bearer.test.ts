// Bearer tokens against a real OpenID provider (server/testing/oidcProvider.ts): its client-credentials grant,
// its published key set, and tokens signed with its own key that are wrong in exactly one respect.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT, decodeJwt, generateKeyPair } from 'jose';
import { principalFromBearer } from './bearer.ts';
import { loadAuthConfig, type ProviderConfig } from './config.ts';
import { API_AUDIENCE, startTestOidcProvider, type TestOidcProvider } from '../testing/oidcProvider.ts';
import { getPrincipal } from './authenticate.ts';

let idp: TestOidcProvider;
let provider: ProviderConfig;
const saved = { ...process.env };

before(async () => {
  idp = await startTestOidcProvider({ redirectUris: ['http://127.0.0.1:1/auth/callback'], postLogoutRedirectUris: [] });
  const env = {
    NIMBUS_AUTH: 'oidc',
    NIMBUS_AUTH_ISSUER: idp.issuer,
    NIMBUS_AUTH_CLIENT_ID: idp.consoleClient.id,
    NIMBUS_AUTH_CLIENT_SECRET: idp.consoleClient.secret,
    NIMBUS_AUTH_REDIRECT_URI: 'http://127.0.0.1:1/auth/callback',
    NIMBUS_AUTH_SESSION_SECRET: 'bearer-test-session-secret-0123456789abcdef',
    NIMBUS_AUTH_BEARER_AUDIENCE: API_AUDIENCE,
    NIMBUS_AUTH_CA_FILE: idp.caFile,
  };
  Object.assign(process.env, env);
  const config = loadAuthConfig(env);
  assert.ok(config.mode === 'oidc');
  provider = config.provider;
});

after(async () => {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  Object.assign(process.env, saved);
  await idp.close();
});

/** A token signed with the provider's real key: only the claims decide. */
function forge(claims: Record<string, unknown>, expiresIn: string | number = '5m'): Promise<string> {
  return new SignJWT({ client_id: idp.serviceClient.id, roles: ['Handoff.Settle'], ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: idp.signingKey.kid, typ: 'at+jwt' })
    .setIssuer(typeof claims.iss === 'string' ? claims.iss : idp.issuer)
    .setAudience(typeof claims.aud === 'string' ? claims.aud : API_AUDIENCE)
    .setSubject(typeof claims.sub === 'string' ? claims.sub : idp.serviceClient.id)
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(idp.signingKey.key);
}

describe('bearer tokens (service principals)', () => {
  test("the provider's client-credentials token resolves to a service principal with its roles", async () => {
    const token = await idp.clientCredentialsToken();
    assert.deepEqual(await principalFromBearer(token, provider), {
      kind: 'service',
      id: idp.serviceClient.id,
      name: idp.serviceClient.id,
      roles: ['Handoff.Settle'],
      groups: [],
    });
    // And through the seam authorization calls.
    const viaRequest = await getPrincipal(new Request('http://127.0.0.1/api/x', { headers: { authorization: `Bearer ${token}` } }));
    assert.equal(viaRequest?.kind, 'service');
  });

  test('an expired token resolves to null', async () => {
    const token = await idp.clientCredentialsToken();
    const exp = decodeJwt(token).exp!;
    assert.equal(await principalFromBearer(token, provider, { now: new Date((exp + 61) * 1000) }), null);
    assert.equal(await principalFromBearer(await forge({}, Math.floor(Date.now() / 1000) - 120), provider), null);
  });

  test('a wrong audience or issuer resolves to null, though signed by the provider', async () => {
    assert.ok(await principalFromBearer(await forge({}), provider), 'the forged control token is accepted');
    assert.equal(await principalFromBearer(await forge({ aud: 'api://someone-else' }), provider), null);
    assert.equal(await principalFromBearer(await forge({ iss: 'https://evil.example' }), provider), null);
  });

  test('a bad signature resolves to null', async () => {
    const token = await idp.clientCredentialsToken();
    const [h, p, s] = token.split('.') as [string, string, string];
    const sig = Buffer.from(s, 'base64url');
    sig[10] = sig[10]! ^ 0xff;
    assert.equal(await principalFromBearer(`${h}.${p}.${sig.toString('base64url')}`, provider), null);
    // Same key id, another key.
    const other = await generateKeyPair('RS256');
    const foreign = await new SignJWT({ client_id: idp.serviceClient.id })
      .setProtectedHeader({ alg: 'RS256', kid: idp.signingKey.kid })
      .setIssuer(idp.issuer).setAudience(API_AUDIENCE).setSubject(idp.serviceClient.id).setExpirationTime('5m')
      .sign(other.privateKey);
    assert.equal(await principalFromBearer(foreign, provider), null);
    assert.equal(await principalFromBearer('not.a.jwt', provider), null);
    assert.equal(await principalFromBearer(`${h}.${p}.`, provider), null);
  });

  test("the test provider reuses its client-credentials token until shortly before expiry; fresh and a wrong secret ask again", async () => {
    // The provider caches (server/testing/oidcProvider.ts) as a real client does; every token it hands out is valid.
    const together = await Promise.all([idp.clientCredentialsToken(), idp.clientCredentialsToken()]);
    const first = await idp.clientCredentialsToken();
    assert.deepEqual(together, [first, first], 'one token for calls made together and after');
    const { exp, jti } = decodeJwt(first);
    assert.ok(exp! * 1000 - Date.now() > 60_000, 'a cached token has more than a minute left');
    const fresh = await idp.clientCredentialsToken({ fresh: true });
    assert.notEqual(decodeJwt(fresh).jti, jti, 'fresh: a new token from the token endpoint');
    assert.equal(await idp.clientCredentialsToken(), fresh, 'which is the cached one from then on');
    assert.equal((await principalFromBearer(fresh, provider))?.kind, 'service');
    for (let i = 0; i < 2; i++)
      await assert.rejects(idp.clientCredentialsToken({ clientSecret: 'wrong' }), /client credentials grant failed: invalid_client/);
  });

  test('a display name with control or bidirectional-override characters has them replaced as it enters', async () => {
    // Before, "\u202Etset@rotarepo" was kept as given and shown in trails and the audit log as "operator@test".
    const named = await principalFromBearer(await forge({ app_displayname: '\u202Etset@rotarepo\u0000' }), provider);
    assert.equal(named?.name, '\uFFFDtset@rotarepo\uFFFD');
    const client = await principalFromBearer(await forge({ client_name: 'ledger\u2066 import' }), provider);
    assert.equal(client?.name, 'ledger\uFFFD import');
  });

  test("a user's token (id token or delegated) is not a service principal", async () => {
    assert.equal(await principalFromBearer(await forge({ sub: 'user-operator', nonce: 'n0nce-value' }), provider), null);
    assert.equal(await principalFromBearer(await forge({ sub: 'user-operator' }), provider), null);
    // A bad bearer token is not rescued by a session cookie.
    const req = new Request('http://127.0.0.1/api/x', { headers: { authorization: 'Bearer x.y.z', cookie: 'nimbus_session=v1.abc' } });
    assert.equal(await getPrincipal(req), null);
  });
});
