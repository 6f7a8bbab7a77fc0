// Any path the console has no page for, and pages that call notFound() (an endpoint the catalog does not know).
// API paths never get here: the proxy answers them with JSON (server/apiRoutes.ts).
import type { Metadata } from 'next';
import Link from '../components/Link.tsx';

export const metadata: Metadata = { title: 'Not found' };

export default function NotFound() {
  return (
    <section>
      <h1 className="mb-2 text-xl font-semibold">Page not found</h1>
      <p className="mb-3 text-sm text-slate-600">There is no such page or endpoint in this console.</p>
      <Link href="/" className="text-sky-700 hover:underline">
        Back to the endpoints
      </Link>
    </section>
  );
}
