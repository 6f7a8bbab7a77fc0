import type { Metadata } from 'next';
import { SearchView } from '../../components/SearchView.tsx';
import { parseSearch, searchSearch, type RawSearch } from '../../components/urlState.ts';

export async function generateMetadata({ searchParams }: { searchParams: Promise<RawSearch> }): Promise<Metadata> {
  const { q } = parseSearch(searchSearch, await searchParams);
  return { title: q ? `Search · ${q}` : 'Search' };
}

export default function SearchPage() {
  return <SearchView />;
}
