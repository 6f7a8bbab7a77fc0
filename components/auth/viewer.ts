// Who is looking at a page, for the layout: the sign-in mode and the signed-in principal from the session cookie.
import { cookies } from 'next/headers';
import { currentAuthConfig } from '../../server/auth/config.ts';
import { SESSION_COOKIE, openSessionWithExpiry } from '../../server/auth/session.ts';
import { ANONYMOUS, type Principal } from '../../server/auth/principal.ts';

export interface Viewer {
  mode: 'off' | 'entra' | 'oidc';
  /** null: sign-in is on and nobody is signed in (or the session expired). */
  principal: Principal | null;
  /** When the session ends (seconds since epoch); null with sign-in off or nobody signed in. */
  expiresAt: number | null;
}

export async function currentViewer(): Promise<Viewer> {
  const config = currentAuthConfig();
  if (config.mode === 'off') return { mode: 'off', principal: ANONYMOUS, expiresAt: null };
  const value = (await cookies()).get(SESSION_COOKIE)?.value;
  // One decryption for both: the principal and the session's end, which the page counts down to.
  const session = openSessionWithExpiry(value, { secret: config.session.secret });
  return { mode: config.mode, principal: session?.principal ?? null, expiresAt: session?.expiresAt ?? null };
}
