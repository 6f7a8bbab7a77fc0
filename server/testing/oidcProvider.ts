// A real OpenID provider for the sign-in tests: the npm `oidc-provider` on 127.0.0.1 (port 0) over https with a
// throwaway self-signed certificate (MSAL refuses authorities that are not https; the console trusts the
// certificate through NIMBUS_AUTH_CA_FILE). It has a login page that checks passwords, test accounts carrying
// `roles` and `groups` claims, the console as a confidential client (code flow, PKCE) and a client-credentials
// client whose JWT access tokens carry `roles`. The signing key is exposed so tests can forge tokens that are
// validly signed but wrong in one other respect (issuer, audience, expiry). Client-credentials tokens are cached per
// client secret (client, resource and scope are fixed) until a minute before they expire, as a real service
// principal's client (MSAL) caches them: a test that asks for a token per request (the Agent API files ask for
// hundreds) no longer pays a token request, with its TLS handshake and signature, for each.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';

export interface TestAccount {
  login: string;
  password: string;
  name: string;
  email: string;
  roles: string[];
  groups: string[];
}

export const TEST_ACCOUNTS: readonly TestAccount[] = [
  { login: 'reader', password: 'reader-pw', name: 'Rita Reader', email: 'rita.reader@nimbus.test', roles: ['Reader'], groups: ['nimbus-readers'] },
  { login: 'operator', password: 'operator-pw', name: 'Otto Operator', email: 'otto.operator@nimbus.test', roles: ['Operator'], groups: ['nimbus-operators'] },
  { login: 'owner', password: 'owner-pw', name: 'Olga Owner', email: 'olga.owner@nimbus.test', roles: ['Owner'], groups: ['nimbus-owners'] },
];

export const CONSOLE_CLIENT_ID = 'nimbus-console';
export const SERVICE_CLIENT_ID = 'erp-integration';
/** The resource (audience) the client-credentials client asks for; the console's NIMBUS_AUTH_BEARER_AUDIENCE. */
export const API_AUDIENCE = 'api://nimbus-console';
const SERVICE_ROLES = ['Handoff.Settle'];

export interface TestOidcProvider {
  /** https://127.0.0.1:{port} */
  issuer: string;
  /** PEM of the self-signed certificate (the console's NIMBUS_AUTH_CA_FILE). */
  caFile: string;
  consoleClient: { id: string; secret: string };
  serviceClient: { id: string; secret: string };
  /** The provider's own signing key, for forging otherwise-valid tokens in tests. */
  signingKey: { key: CryptoKey; kid: string };
  /**
   * A client-credentials access token for the service client (real token endpoint), the cached one while it has
   * more than a minute left. `fresh: true` always asks the token endpoint (and caches the new token). A failed
   * grant (a wrong `clientSecret`) is never cached.
   */
  clientCredentialsToken(options?: { clientSecret?: string; fresh?: boolean }): Promise<string>;
  close(): Promise<void>;
}

export interface TestOidcProviderOptions {
  /** The console's callback and post-logout URLs. */
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  /** Entra look-alike: the issuer becomes `https://127.0.0.1:{port}/{tenantId}/v2.0` (where MSAL's AAD mode looks
   * for it) and id tokens carry `tid` and `oid`, as Entra's do. */
  entraTenantId?: string;
}

function selfSignedCertificate(dir: string): { key: string; cert: string; certFile: string } {
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8'), certFile };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function loginPage(prefix: string, uid: string, error?: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test identity provider - sign in</title></head>
<body><h1>Sign in to the test identity provider</h1>${error ? `<p role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="${escapeHtml(prefix)}/interaction/${escapeHtml(uid)}/login">
<label>User name <input name="login" autocomplete="username" required></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button></form></body></html>`;
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export async function startTestOidcProvider(options: TestOidcProviderOptions): Promise<TestOidcProvider> {
  const dir = mkdtempSync(join(tmpdir(), 'nimbus-oidc-'));
  const prefix = options.entraTenantId ? `/${options.entraTenantId}/v2.0` : '';
  const tls = selfSignedCertificate(dir);
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = 'test-signing-key';
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
  const consoleClient = { id: CONSOLE_CLIENT_ID, secret: 'console-client-secret-for-tests' };
  const serviceClient = { id: SERVICE_CLIENT_ID, secret: 'erp-client-secret-for-tests' };

  // The provider needs its issuer URL, which needs the port: it is created once the server listens.
  const live: { provider?: Provider; handle?: (req: IncomingMessage, res: ServerResponse) => void } = {};
  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    void route(req, res).catch(() => {
      if (!res.headersSent) res.statusCode = 500;
      res.end();
    });
  });
  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // With a path in the issuer the provider is mounted there, Express-style (it reads originalUrl for its links).
    if (prefix) {
      if (!req.url?.startsWith(`${prefix}/`)) {
        res.statusCode = 404;
        res.end();
        return;
      }
      (req as IncomingMessage & { originalUrl?: string }).originalUrl = req.url;
      req.url = req.url.slice(prefix.length);
    }
    const match = /^\/interaction\/([\w-]+)(\/login)?$/.exec(new URL(req.url ?? '/', 'https://x').pathname);
    const provider = live.provider;
    if (!match || !provider) return live.handle?.(req, res);
    const uid = match[1]!;
    const html = (status: number, body: string) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(body);
    };
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === 'consent') {
      // The console is a first-party client: grant what it asked for without a consent page.
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: details.session!.accountId, clientId: String(details.params.client_id) });
      if (!grant) return html(400, 'no grant');
      const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
      return;
    }
    if (req.method === 'GET' && !match[2]) return html(200, loginPage(prefix, uid));
    if (req.method === 'POST' && match[2]) {
      const form = await readForm(req);
      const account = TEST_ACCOUNTS.find((a) => a.login === form.get('login') && a.password === form.get('password'));
      if (!account) return html(401, loginPage(prefix, uid, 'Unknown user name or wrong password.'));
      await provider.interactionFinished(req, res, { login: { accountId: account.login } }, { mergeWithLastSubmission: false });
      return;
    }
    res.statusCode = 405;
    res.end();
  }

  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  const issuer = `https://127.0.0.1:${(server.address() as AddressInfo).port}${prefix}`;

  const configuration: Configuration = {
    clients: [
      {
        client_id: consoleClient.id,
        client_secret: consoleClient.secret,
        redirect_uris: options.redirectUris,
        post_logout_redirect_uris: options.postLogoutRedirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
      {
        client_id: serviceClient.id,
        client_secret: serviceClient.secret,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: ['test-provider-cookie-key-0123456789'] },
    // MSAL reads the user's claims from the id token, so put them there rather than only behind userinfo.
    conformIdTokenClaims: false,
    claims: {
      openid: ['sub'],
      profile: ['name', 'preferred_username', 'roles', 'groups', 'tid', 'oid'],
      email: ['email', 'email_verified'],
    },
    pkce: { required: () => true },
    ttl: { ClientCredentials: 600, AccessToken: 600, IdToken: 600, Grant: 3600, Session: 3600, Interaction: 600 },
    interactions: { url: (_ctx: KoaContextWithOIDC, interaction) => `${prefix}/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      rpInitiatedLogout: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx: KoaContextWithOIDC) => (ctx.oidc.client?.clientId === serviceClient.id ? API_AUDIENCE : undefined),
        useGrantedResource: () => false,
        getResourceServerInfo: (_ctx: KoaContextWithOIDC, resource: string) => {
          if (resource !== API_AUDIENCE) throw new Error(`unknown resource ${resource}`);
          return { scope: 'api', audience: API_AUDIENCE, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
    extraTokenClaims: (_ctx: KoaContextWithOIDC, token) =>
      token.kind === 'ClientCredentials' && token.clientId === serviceClient.id ? { roles: SERVICE_ROLES } : undefined,
    findAccount: (_ctx: KoaContextWithOIDC, id: string) => {
      const account = TEST_ACCOUNTS.find((a) => a.login === id);
      if (!account) return undefined;
      return {
        accountId: id,
        claims: () => ({
          sub: account.login,
          name: account.name,
          preferred_username: account.email,
          email: account.email,
          email_verified: true,
          roles: account.roles,
          groups: account.groups,
          ...(options.entraTenantId
            ? { tid: options.entraTenantId, oid: `00000000-0000-4000-8000-${String(TEST_ACCOUNTS.indexOf(account) + 1).padStart(12, '0')}` }
            : {}),
        }),
      };
    },
    // oidc-provider's error pages are fine for tests; keep its console quiet.
    renderError: (ctx: KoaContextWithOIDC, out) => {
      ctx.type = 'html';
      ctx.body = `<!doctype html><title>error</title><h1>${escapeHtml(String(out.error))}</h1><p>${escapeHtml(String(out.error_description ?? ''))}</p>`;
    },
  };
  const provider = new Provider(issuer, configuration);
  provider.proxy = false;
  live.provider = provider;
  live.handle = provider.callback() as (req: IncomingMessage, res: ServerResponse) => void;

  const tokens = new Map<string, CachedToken>();
  async function requestToken(clientSecret: string): Promise<{ token: string; expiresIn: number }> {
    const res = await fetchWithCa(`${issuer}/token`, tls.cert, {
      grant_type: 'client_credentials',
      client_id: serviceClient.id,
      client_secret: clientSecret,
      resource: API_AUDIENCE,
      scope: 'api',
    });
    const body = JSON.parse(res) as { access_token?: string; expires_in?: number; error?: string };
    if (!body.access_token) throw new Error(`client credentials grant failed: ${body.error ?? 'no token'}`);
    return { token: body.access_token, expiresIn: body.expires_in ?? 0 };
  }

  return {
    issuer,
    caFile: tls.certFile,
    consoleClient,
    serviceClient,
    signingKey: { key: privateKey, kid },
    clientCredentialsToken(o = {}) {
      const secret = o.clientSecret ?? serviceClient.secret;
      const cached = tokens.get(secret);
      if (!o.fresh && cached && (cached.renewAt === undefined || Date.now() < cached.renewAt)) return cached.token;
      // The promise is cached, so calls made together share one request (and arrive in the order they were made).
      const entry: CachedToken = {
        token: requestToken(secret).then(
          ({ token, expiresIn }) => {
            entry.renewAt = Date.now() + Math.max(0, expiresIn - TOKEN_RENEW_MARGIN_S) * 1000;
            return token;
          },
          (err: unknown) => {
            if (tokens.get(secret) === entry) tokens.delete(secret);
            throw err;
          },
        ),
      };
      tokens.set(secret, entry);
      return entry.token;
    },
    async close() {
      await new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A cached client-credentials token: `renewAt` (ms) is set once the token endpoint has answered. */
interface CachedToken {
  token: Promise<string>;
  renewAt?: number;
}

/** A cached token is renewed this many seconds before it expires (the provider issues them for 600 s). */
const TOKEN_RENEW_MARGIN_S = 60;

/** POSTs a form to the provider, trusting its self-signed certificate. */
async function fetchWithCa(url: string, ca: string, form: Record<string, string>): Promise<string> {
  const { request } = await import('node:https');
  return new Promise((ok, fail) => {
    const req = request(url, { method: 'POST', ca, headers: { 'content-type': 'application/x-www-form-urlencoded' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => ok(Buffer.concat(chunks).toString('utf8')));
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end(new URLSearchParams(form).toString());
  });
}
