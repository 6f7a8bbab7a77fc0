import type { Metadata } from 'next';
import { ReconcileView } from '../../../components/operations/ReconcileView.tsx';

export const metadata: Metadata = { title: 'Operations · Reconcile' };

export default function ReconcilePage() {
  return <ReconcileView />;
}
