// Who is looking at a page, for the layout: the sign-in mode, the signed-in principal and when the session ends,
// from the request's Cookie header read exactly as requests read it (server/auth/authenticate.ts).
import { headers } from 'next/headers';
import { sessionFromCookies, type SessionView } from '../../server/auth/authenticate.ts';

export type Viewer = SessionView;

export async function currentViewer(): Promise<Viewer> {
  return sessionFromCookies((await headers()).get('cookie'));
}
