// The provider returns here with the authorization code (the registered redirect URI).
import { completeSignIn } from '../../../server/auth/flow.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return completeSignIn(request);
}
