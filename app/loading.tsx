// Shown at once while a page's server component reads its first data (components/prefetch.tsx): a navigation
// answers immediately, and the page replaces this as soon as its data is in.
export default function Loading() {
  return (
    <p role="status" className="text-sm text-slate-500">
      Loading…
    </p>
  );
}
