import { DeadLettersView } from '../../../../../components/topology/DeadLettersView.tsx';

export default async function DeadLettersPage({ params }: { params: Promise<{ topic: string; subscription: string }> }) {
  const { topic, subscription } = await params;
  return <DeadLettersView topic={decodeURIComponent(topic)} subscription={decodeURIComponent(subscription)} />;
}
