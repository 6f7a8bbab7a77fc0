import { redirect } from 'next/navigation';

export default function TopologyPage() {
  redirect('/topology/subscriptions');
}
