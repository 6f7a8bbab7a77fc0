// The header's account corner: who is signed in and a Sign out button. Sign-out is a form POST, so no link or
// prefetch signs somebody out; a form another site posts is refused by the route's same-origin check (flow.ts).
import type { Principal } from '../../server/auth/principal.ts';

export function UserMenu({ principal }: { principal: Principal }) {
  return (
    <div className="flex items-center gap-3 text-sm">
      <span className="text-slate-300" data-testid="signed-in-user" title={principal.id}>
        {principal.name}
      </span>
      <form method="post" action="/auth/signout">
        <button type="submit" className="text-slate-300 underline-offset-2 hover:text-white hover:underline">
          Sign out
        </button>
      </form>
    </div>
  );
}
