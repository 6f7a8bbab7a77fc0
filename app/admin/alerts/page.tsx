import type { Metadata } from 'next';
import { AlertsAdminView } from '../../../components/admin/AlertsAdminView.tsx';

export const metadata: Metadata = { title: 'Admin · Alert rules' };

export default function AlertsAdminPage() {
  return <AlertsAdminView />;
}
