import { HealthView } from '../../../components/admin/HealthView.tsx';

export default function HealthPage() {
  return <HealthView />;
}
