// Nav links of the audit log and the access page. A server component that renders per request (`connection()`):
// the root layout includes it, which makes every page dynamically rendered - required for the per-request CSP
// nonce that proxy.ts sets (a prerendered page's inline scripts would carry no nonce and be blocked).
import Link from 'next/link';
import { connection } from 'next/server';

export async function SecurityNav() {
  await connection();
  return (
    <>
      <Link href="/audit" className="text-slate-300 hover:text-white">
        Audit
      </Link>
      <Link href="/admin/access" className="text-slate-300 hover:text-white">
        Access
      </Link>
    </>
  );
}
