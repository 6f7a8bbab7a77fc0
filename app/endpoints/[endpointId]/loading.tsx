// Shown at once while a page's server component reads its first data (components/prefetch.tsx): a navigation
// answers immediately, and the page replaces this as soon as its data is in. One per section rather than one at
// the root: a root boundary would wrap every layout, and a 404 decided in a layout (an unknown endpoint) could
// then no longer set the status, the response having started streaming.
export default function Loading() {
  return (
    <p role="status" className="text-sm text-slate-500">
      Loading…
    </p>
  );
}
