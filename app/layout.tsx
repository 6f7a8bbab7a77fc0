import type { Metadata } from 'next';
import type { ReactNode } from 'react';
import Link from 'next/link';
import './globals.css';
import { Providers } from '../components/Providers.tsx';
import { GlobalSearch } from '../components/GlobalSearch.tsx';
import { TimeZoneSwitch } from '../components/timeZone.tsx';
import { connection } from 'next/server';
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

const NAV: ReadonlyArray<readonly [href: string, label: string]> = [
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
  // Not signed in: no header, no page - only the hop to sign-in (the APIs answer 401 on their own).
  if (viewer.principal === null) {
    return (
      <html lang="en">
        <body className="min-h-screen bg-slate-50 text-slate-900">
          <SignInRedirect />
        </body>
      </html>
    );
  }
  return (
    <html lang="en">
      <body className="min-h-screen bg-slate-50 text-slate-900">
        <Providers>
          {viewer.mode === 'off' && <AuthOffBanner />}
          {viewer.expiresAt !== null && <SessionExpiry expiresAt={viewer.expiresAt} />}
          <header className="border-b border-slate-200 bg-slate-900 text-slate-100">
            <nav className="mx-auto flex max-w-7xl items-center gap-6 px-4 py-2">
              <Link href="/" className="font-semibold tracking-tight">
                NimBus Console
              </Link>
              {NAV.map(([href, label]) => (
                <Link key={href} href={href} className="text-slate-300 hover:text-white">
                  {label}
                </Link>
              ))}
              <JobsDrawer />
              <div className="ml-auto">
                <GlobalSearch />
              </div>
              <TimeZoneSwitch />
              {viewer.principal.kind === 'user' && <UserMenu principal={viewer.principal} />}
            </nav>
          </header>
          <main className="mx-auto max-w-7xl px-4 py-4">{children}</main>
        </Providers>
      </body>
    </html>
  );
}
