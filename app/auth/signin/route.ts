// Starts sign-in: redirects to the identity provider (server/auth/flow.ts).
import { beginSignIn } from '../../../server/auth/flow.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return beginSignIn(request);
}
