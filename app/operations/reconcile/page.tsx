import type { Metadata } from 'next';
import { ReconcileView } from '../../../components/operations/ReconcileView.tsx';

export const metadata: Metadata = { title: 'Operations · Reconcile' };

// Not prefetched, unlike the other pages' first reads: the scan reads every endpoint's Pending rows and takes
// session locks on the broker, too slow to hold the page's first paint. The view says "Scanning…" until it answers.
export default function ReconcilePage() {
  return <ReconcileView />;
}
