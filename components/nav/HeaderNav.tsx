'use client';
// The header's page links. From 768 px (Tailwind's md) they sit in the header row; below, they collapse into a
// Menu button that opens them as a list under the header (Escape or choosing a page closes it again). The current
// page's link says so with aria-current. A link whose page is still on its way says so too (PendingMark): pages
// are sent whole, without a loading boundary (docs/console.md), so a click on a slow page keeps the current one on
// screen until the new one arrives, and the mark is the operator's sign that the click was taken.
import { useLinkStatus } from 'next/link';
import Link from '../Link.tsx';
import { usePathname } from 'next/navigation';
import { useRef, useState, type KeyboardEvent } from 'react';

export type NavLink = readonly [href: string, label: string];

/** The link of the page: the longest href that is the path or a folder of it ("/" also owns /endpoints/…). */
export function currentHref(links: readonly NavLink[], pathname: string): string | null {
  let best: string | null = null;
  for (const [href] of links) {
    const owns =
      href === '/' ? pathname === '/' || pathname.startsWith('/endpoints') : pathname === href || pathname.startsWith(`${href}/`);
    if (owns && (best === null || href.length > best.length)) best = href;
  }
  return best;
}

/** Inside a Link: a dot while the navigation it started is pending (after 150 ms, so fast ones do not flicker). */
function PendingMark() {
  const { pending } = useLinkStatus();
  if (!pending) return null;
  return (
    <span data-testid="nav-pending" className="nav-pending">
      <span aria-hidden="true" className="ml-1.5 inline-block h-1.5 w-1.5 motion-safe:animate-pulse rounded-full bg-sky-400 align-middle" />
      <span className="sr-only"> (loading)</span>
    </span>
  );
}

export function HeaderNav({ links }: { links: readonly NavLink[] }) {
  const pathname = usePathname();
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const current = currentHref(links, pathname);
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === 'Escape' && open) {
      setOpen(false);
      button.current?.focus();
    }
  };
  return (
    <nav aria-label="Main" onKeyDown={onKeyDown}>
      <button
        ref={button}
        type="button"
        className="rounded border border-slate-600 px-2 py-0.5 text-slate-200 hover:text-white md:hidden"
        aria-expanded={open}
        aria-controls="main-menu"
        data-testid="menu-button"
        onClick={() => setOpen(!open)}
      >
        Menu
      </button>
      <ul
        id="main-menu"
        className={`${open ? 'flex' : 'hidden'} absolute inset-x-0 top-full z-30 flex-col border-b border-slate-700 bg-slate-900 px-4 py-2 shadow-lg md:static md:flex md:flex-row md:flex-wrap md:gap-x-6 md:gap-y-1 md:border-0 md:p-0 md:shadow-none`}
      >
        {links.map(([href, label]) => (
          <li key={href}>
            <Link
              href={href}
              aria-current={href === current ? 'page' : undefined}
              onClick={() => setOpen(false)}
              className={`block py-1.5 md:py-0 ${href === current ? 'font-semibold text-white underline decoration-sky-400 decoration-2 underline-offset-4' : 'text-slate-300 hover:text-white'}`}
            >
              {label}
              <PendingMark />
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}
