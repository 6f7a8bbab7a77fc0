import type { Metadata } from 'next';
import { AlertHistoryView } from '../../components/AlertHistoryView.tsx';

export const metadata: Metadata = { title: 'Alerts' };

export default function AlertsPage() {
  return <AlertHistoryView />;
}
