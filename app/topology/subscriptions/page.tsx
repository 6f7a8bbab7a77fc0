import { SubscriptionsView } from '../../../components/topology/SubscriptionsView.tsx';

export default function SubscriptionsPage() {
  return <SubscriptionsView />;
}
