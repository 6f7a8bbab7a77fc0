import type { Metadata } from 'next';
import type { ReactNode } from 'react';
import Link from '../components/Link.tsx';
import './globals.css';
import { Providers } from '../components/Providers.tsx';
import { GlobalSearch } from '../components/GlobalSearch.tsx';
import { TimeZoneSwitch } from '../components/timeZone.tsx';
import { connection } from 'next/server';
import { headers } from 'next/headers';
import { HeaderNav, type NavLink } from '../components/nav/HeaderNav.tsx';
import { KeyboardShortcuts } from '../components/shortcuts/KeyboardShortcuts.tsx';
import { ThemeSwitch } from '../components/theme/ThemeSwitch.tsx';
import { THEME_SCRIPT } from '../components/theme/themeScript.ts';
import { currentViewer } from '../components/auth/viewer.ts';
import { AuthOffBanner } from '../components/auth/AuthOffBanner.tsx';
import { SignInRedirect } from '../components/auth/SignInRedirect.tsx';
import { UserMenu } from '../components/auth/UserMenu.tsx';
import { SessionExpiry } from '../components/auth/SessionExpiry.tsx';
import { JobsDrawer } from '../components/operations/JobsDrawer.tsx';

export const metadata: Metadata = {
  // Each page names itself (`NimBus · billingendpoint · Failed`): tabs and history stay tellable apart.
  title: { default: 'NimBus Console', template: 'NimBus · %s' },
  description: 'Operations console for the NimBus messaging platform',
};

const NAV: readonly NavLink[] = [
  ['/', 'Endpoints'],
  ['/failures', 'Failures'],
  ['/monitor', 'Monitor'],
  ['/flow', 'Flow'],
  ['/topology', 'Topology'],
  ['/operations', 'Operations'],
  ['/alerts', 'Alerts'],
  ['/admin', 'Admin'],
  ['/audit', 'Audit'],
  ['/admin/access', 'Access'],
];

export default async function RootLayout({ children }: { children: ReactNode }) {
  // Every page renders per request, also with sign-in off (when no cookie is read): the per-request CSP nonce
  // that proxy.ts sets only reaches Next's inline scripts on a dynamically rendered page; a prerendered page's
  // scripts would carry no nonce and be blocked.
  await connection();
  const viewer = await currentViewer();
  // The theme script runs before the first paint (no light flash for a dark-mode viewer); the page's CSP admits
  // inline scripts only with this request's nonce (proxy.ts). <html> gets its class from the script, so React is
  // told not to mind the difference at hydration.
  const nonce = (await headers()).get('x-nonce') ?? undefined;
  const themeHead = (
    <head>
      <script nonce={nonce} dangerouslySetInnerHTML={{ __html: THEME_SCRIPT }} />
    </head>
  );
  // Not signed in: no header, no page - only the hop to sign-in (the APIs answer 401 on their own).
  if (viewer.principal === null) {
    return (
      <html lang="en" suppressHydrationWarning>
        {themeHead}
        <body className="min-h-screen bg-slate-50 text-slate-900">
          <SignInRedirect />
        </body>
      </html>
    );
  }
  return (
    <html lang="en" suppressHydrationWarning>
      {themeHead}
      <body className="min-h-screen bg-slate-50 text-slate-900">
        <Providers>
          <a
            href="#main"
            className="sr-only z-50 rounded bg-white px-3 py-2 text-sky-700 shadow focus:not-sr-only focus:fixed focus:left-2 focus:top-2"
          >
            Skip to content
          </a>
          {viewer.mode === 'off' && <AuthOffBanner />}
          {viewer.expiresAt !== null && <SessionExpiry expiresAt={viewer.expiresAt} />}
          {/* Dark in both themes: theme-fixed keeps the light palette's slate and sky inside it (app/theme.css). */}
          <header className="theme-fixed relative border-b border-slate-200 bg-slate-900 text-slate-100">
            <div className="mx-auto flex max-w-7xl flex-wrap items-center gap-x-6 gap-y-2 px-4 py-2">
              <Link href="/" className="font-semibold tracking-tight">
                NimBus Console
              </Link>
              <HeaderNav links={NAV} />
              <JobsDrawer />
              <div className="w-full md:ml-auto md:w-auto">
                <GlobalSearch />
              </div>
              <TimeZoneSwitch />
              <ThemeSwitch />
              {viewer.principal.kind === 'user' && <UserMenu principal={viewer.principal} />}
            </div>
          </header>
          <KeyboardShortcuts />
          <main id="main" tabIndex={-1} className="mx-auto max-w-7xl px-4 py-4 focus:outline-none">{children}</main>
        </Providers>
      </body>
    </html>
  );
}
