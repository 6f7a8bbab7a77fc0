import { AlertsAdminView } from '../../../components/admin/AlertsAdminView.tsx';

export default function AlertsAdminPage() {
  return <AlertsAdminView />;
}
