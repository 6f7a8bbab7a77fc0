// Sign-in settings (NIMBUS_AUTH and NIMBUS_AUTH_*), validated once into one AuthConfig. A bad or missing setting is
// one AuthConfigError naming every problem variable and never a value (the client and session secrets are among
// them). server/config.ts folds these problems into the console's one start-up message.
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export type AuthMode = 'off' | 'entra' | 'oidc';

/** Default session lifetime: one working day. */
export const DEFAULT_SESSION_SECONDS = 8 * 60 * 60;
const MIN_SECRET_BYTES = 32;

export interface ProviderConfig {
  /** Entra: `https://login.microsoftonline.com/{tenant}/v2.0`-style authority; OIDC: the issuer URL. */
  authority: string;
  /** The issuer the id tokens and bearer tokens carry (Entra v2: `…/{tenant}/v2.0`). */
  issuer: string;
  /** Further accepted bearer issuers (Entra v1 access tokens carry `https://sts.windows.net/{tenant}/`). */
  extraBearerIssuers: string[];
  /** Entra tenant id (entra mode only). */
  tenantId?: string;
  clientId: string;
  clientSecret: string;
  /** Absolute callback URL registered with the provider, ending in /auth/callback. */
  redirectUri: string;
  /** Accepted `aud` of bearer tokens; default: the client id and `api://{client id}`. */
  bearerAudiences: string[];
}

export type AuthConfig =
  | { mode: 'off' }
  | {
      mode: 'entra' | 'oidc';
      provider: ProviderConfig;
      session: { secret: string; maxAgeSeconds: number };
    };

export class AuthConfigError extends Error {
  override readonly name = 'AuthConfigError';
  constructor(readonly problems: string[]) {
    super(`sign-in is not configured: ${problems.join('; ')}`);
  }
}

const text = (what: string) => z.string({ error: `${what} is not set` }).trim().min(1, `${what} is empty`);
const httpUrl = (what: string) =>
  text(what).pipe(
    z.url({ protocol: /^https?$/, error: `${what} is not an http(s) URL` }),
  );

const envSchema = z.object({
  NIMBUS_AUTH: z.enum(['off', 'entra', 'oidc'], { error: 'NIMBUS_AUTH must be off, entra or oidc' }).default('off'),
  NIMBUS_AUTH_TENANT_ID: z.string().trim().optional(),
  NIMBUS_AUTH_ISSUER: z.string().trim().optional(),
  NIMBUS_AUTH_CLIENT_ID: z.string().trim().optional(),
  NIMBUS_AUTH_CLIENT_SECRET: z.string().optional(),
  NIMBUS_AUTH_REDIRECT_URI: z.string().trim().optional(),
  NIMBUS_AUTH_SESSION_SECRET: z.string().optional(),
  NIMBUS_AUTH_SESSION_SECONDS: z.string().trim().optional(),
  NIMBUS_AUTH_BEARER_AUDIENCE: z.string().trim().optional(),
  NIMBUS_AUTH_ENTRA_HOST: z.string().trim().optional(),
  NIMBUS_AUTH_CA_FILE: z.string().trim().optional(),
});

type Env = Record<string, string | undefined>;

/** Reads the sign-in settings; throws one AuthConfigError listing every problem (variable names only). */
export function loadAuthConfig(env: Env = process.env): AuthConfig {
  const problems = authConfigProblems(env);
  if (problems.length > 0) throw new AuthConfigError(problems);
  return build(env);
}

/** Every problem with the sign-in settings as `VARIABLE: what is wrong`; empty when they are usable. */
export function authConfigProblems(env: Env): string[] {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) return parsed.error.issues.map((i) => `${String(i.path[0] ?? 'environment')}: ${i.message}`);
  const e = parsed.data;
  if (e.NIMBUS_AUTH === 'off') return [];

  const problems: string[] = [];
  const check = (name: keyof typeof e, schema: z.ZodType) => {
    const r = schema.safeParse(e[name]);
    if (!r.success) problems.push(`${name}: ${r.error.issues[0]?.message ?? 'invalid'}`);
  };
  if (e.NIMBUS_AUTH === 'entra') {
    check(
      'NIMBUS_AUTH_TENANT_ID',
      text(`the Entra tenant id (needed with NIMBUS_AUTH=entra)`).regex(
        /^[A-Za-z0-9.-]+$/,
        'the Entra tenant id must be a GUID or a domain name',
      ),
    );
    if (e.NIMBUS_AUTH_ENTRA_HOST !== undefined)
      check('NIMBUS_AUTH_ENTRA_HOST', z.url({ protocol: /^https$/, error: 'the Entra host must be an https URL' }));
  } else {
    check(
      'NIMBUS_AUTH_ISSUER',
      text('the OpenID issuer URL (needed with NIMBUS_AUTH=oidc)').pipe(
        z.url({ protocol: /^https$/, error: 'the OpenID issuer must be an https URL (MSAL accepts no other authority)' }),
      ),
    );
  }
  check('NIMBUS_AUTH_CLIENT_ID', text('the client (application) id'));
  check('NIMBUS_AUTH_CLIENT_SECRET', text('the client secret'));
  check(
    'NIMBUS_AUTH_REDIRECT_URI',
    httpUrl('the redirect URI').refine(
      (v) => new URL(v).pathname === '/auth/callback',
      'the redirect URI must end in /auth/callback',
    ),
  );
  check(
    'NIMBUS_AUTH_SESSION_SECRET',
    z
      .string({ error: `the session secret is not set (at least ${MIN_SECRET_BYTES} bytes, e.g. \`openssl rand -base64 48\`)` })
      .refine((v) => Buffer.byteLength(v, 'utf8') >= MIN_SECRET_BYTES, `the session secret must be at least ${MIN_SECRET_BYTES} bytes`),
  );
  if (e.NIMBUS_AUTH_SESSION_SECONDS !== undefined)
    check(
      'NIMBUS_AUTH_SESSION_SECONDS',
      z.string().regex(/^\d+$/, 'the session lifetime must be a whole number of seconds').refine(
        (v) => Number(v) >= 60 && Number(v) <= 30 * 24 * 3600,
        'the session lifetime must be between 60 seconds and 30 days',
      ),
    );
  if (e.NIMBUS_AUTH_CA_FILE !== undefined) {
    let pem = '';
    try {
      pem = readFileSync(e.NIMBUS_AUTH_CA_FILE, 'utf8');
    } catch {
      problems.push('NIMBUS_AUTH_CA_FILE: the CA certificate file cannot be read');
    }
    if (pem !== '' && !pem.includes('-----BEGIN CERTIFICATE-----'))
      problems.push('NIMBUS_AUTH_CA_FILE: the file holds no PEM certificate');
  }
  return problems;
}

function build(env: Env): AuthConfig {
  const get = (name: string) => {
    const v = env[name];
    return v === undefined || v === '' ? undefined : v.trim();
  };
  const mode = (get('NIMBUS_AUTH') ?? 'off') as AuthMode;
  if (mode === 'off') return { mode };
  const clientId = get('NIMBUS_AUTH_CLIENT_ID')!;
  const explicitAudience = get('NIMBUS_AUTH_BEARER_AUDIENCE');
  const bearerAudiences = explicitAudience
    ? explicitAudience.split(',').map((a) => a.trim()).filter(Boolean)
    : [clientId, `api://${clientId}`];
  let provider: ProviderConfig;
  if (mode === 'entra') {
    const tenantId = get('NIMBUS_AUTH_TENANT_ID')!;
    const host = (get('NIMBUS_AUTH_ENTRA_HOST') ?? 'https://login.microsoftonline.com').replace(/\/+$/, '');
    provider = {
      authority: `${host}/${tenantId}`,
      issuer: `${host}/${tenantId}/v2.0`,
      extraBearerIssuers: [`https://sts.windows.net/${tenantId}/`],
      tenantId,
      clientId,
      clientSecret: env.NIMBUS_AUTH_CLIENT_SECRET!,
      redirectUri: get('NIMBUS_AUTH_REDIRECT_URI')!,
      bearerAudiences,
    };
  } else {
    const issuer = get('NIMBUS_AUTH_ISSUER')!;
    provider = {
      authority: issuer,
      issuer,
      extraBearerIssuers: [],
      clientId,
      clientSecret: env.NIMBUS_AUTH_CLIENT_SECRET!,
      redirectUri: get('NIMBUS_AUTH_REDIRECT_URI')!,
      bearerAudiences,
    };
  }
  const seconds = get('NIMBUS_AUTH_SESSION_SECONDS');
  return {
    mode,
    provider,
    session: {
      secret: env.NIMBUS_AUTH_SESSION_SECRET!,
      maxAgeSeconds: seconds === undefined ? DEFAULT_SESSION_SECONDS : Number(seconds),
    },
  };
}

let cached: { key: string; config: AuthConfig } | undefined;

/** The settings of this process, read once (and again only if the variables change, as tests do). */
export function currentAuthConfig(env: Env = process.env): AuthConfig {
  const key = JSON.stringify(Object.keys(envSchema.shape).map((k) => env[k] ?? ''));
  if (cached?.key !== key) cached = { key, config: loadAuthConfig(env) };
  return cached.config;
}

/** True for addresses that only this machine can reach. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}
