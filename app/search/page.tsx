import { Suspense } from 'react';
import { SearchView } from '../../components/SearchView.tsx';

export default function SearchPage() {
  return (
    <Suspense fallback={<p className="text-sm text-slate-500">Loading…</p>}>
      <SearchView />
    </Suspense>
  );
}
