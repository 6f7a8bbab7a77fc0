// Shown on every page while NIMBUS_AUTH=off, so nobody mistakes an open loopback console for a protected one.
export function AuthOffBanner() {
  return (
    <div role="note" className="bg-amber-100 px-4 py-1 text-center text-sm text-amber-900" data-testid="auth-off-banner">
      Authentication is off: anyone who can reach this console can use it (it only listens on this machine). Set
      NIMBUS_AUTH to entra or oidc to require sign-in.
    </div>
  );
}
