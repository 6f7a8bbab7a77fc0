import { ReconcileView } from '../../../components/operations/ReconcileView.tsx';

export default function ReconcilePage() {
  return <ReconcileView />;
}
