// Sign-out is a POST (a form button in the header): a GET could be triggered by any page linking here, or by a prefetch.
import { signOut } from '../../../server/auth/flow.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request): Promise<Response> {
  return signOut(request);
}
