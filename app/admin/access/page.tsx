import { AccessView } from '../../../components/audit/AccessView.tsx';

export default function AccessPage() {
  return <AccessView />;
}
