import { AlertHistoryView } from '../../components/AlertHistoryView.tsx';

export default function AlertsPage() {
  return <AlertHistoryView />;
}
