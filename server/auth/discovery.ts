// The provider's OpenID discovery document (`{issuer}/.well-known/openid-configuration`): where its keys, token
// and end-session endpoints are. Fetched once per issuer; a failure is not cached, so a provider that was down
// at start is found once it is back.
import { z } from 'zod';
import type { ProviderConfig } from './config.ts';
import { providerRequest } from './providerFetch.ts';

const discoverySchema = z.object({
  issuer: z.string(),
  authorization_endpoint: z.string().url(),
  token_endpoint: z.string().url(),
  jwks_uri: z.string().url(),
  end_session_endpoint: z.string().url().optional(),
});
export type Discovery = z.infer<typeof discoverySchema>;

const cache = new Map<string, Promise<Discovery>>();

export function discoveryUrl(issuer: string): string {
  return `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
}

export function discover(provider: Pick<ProviderConfig, 'issuer'>): Promise<Discovery> {
  const url = discoveryUrl(provider.issuer);
  let pending = cache.get(url);
  if (!pending) {
    pending = load(url);
    cache.set(url, pending);
    pending.catch(() => cache.delete(url));
  }
  return pending;
}

async function load(url: string): Promise<Discovery> {
  const res = await providerRequest(url);
  if (res.status !== 200) throw new Error(`OpenID discovery at ${url} answered HTTP ${res.status}`);
  const parsed = discoverySchema.safeParse(JSON.parse(res.body));
  if (!parsed.success) throw new Error(`OpenID discovery at ${url} is not a usable discovery document`);
  return parsed.data;
}
