// Who is looking at a page, for the layout: the sign-in mode and the signed-in principal from the session cookie.
// Reading cookies makes every page render per request, which a live operations console does anyway.
import { cookies } from 'next/headers';
import { currentAuthConfig } from '../../server/auth/config.ts';
import { SESSION_COOKIE, openSession } from '../../server/auth/session.ts';
import { ANONYMOUS, type Principal } from '../../server/auth/principal.ts';

export interface Viewer {
  mode: 'off' | 'entra' | 'oidc';
  /** null: sign-in is on and nobody is signed in (or the session expired). */
  principal: Principal | null;
}

export async function currentViewer(): Promise<Viewer> {
  const config = currentAuthConfig();
  if (config.mode === 'off') return { mode: 'off', principal: ANONYMOUS };
  const value = (await cookies()).get(SESSION_COOKIE)?.value;
  return { mode: config.mode, principal: openSession(value, { secret: config.session.secret }) };
}
