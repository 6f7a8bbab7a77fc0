// Resolves a request to the calling Principal. Placeholder until sign-in lands: with NIMBUS_AUTH=off every caller
// is the anonymous principal; in any other mode nobody is signed in yet (so authorization answers 401).
import { ANONYMOUS, type Principal } from './principal.ts';

export function authMode(env: Record<string, string | undefined> = process.env): string {
  return env.NIMBUS_AUTH == null || env.NIMBUS_AUTH === '' ? 'off' : env.NIMBUS_AUTH;
}

/** The principal behind a request: session cookie or bearer token; null when not signed in. */
export async function getPrincipal(_request: Request): Promise<Principal | null> {
  return authMode() === 'off' ? ANONYMOUS : null;
}
