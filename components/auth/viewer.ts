// Who is looking at a page, for the layout: the sign-in mode, the signed-in principal and when the session ends,
// from the session cookie as next/headers gives it (server/auth/authenticate.ts reads it, as for requests).
import { cookies } from 'next/headers';
import { SESSION_COOKIE } from '../../server/auth/session.ts';
import { sessionOf, type SessionView } from '../../server/auth/authenticate.ts';

export type Viewer = SessionView;

export async function currentViewer(): Promise<Viewer> {
  return sessionOf((await cookies()).get(SESSION_COOKIE)?.value);
}
