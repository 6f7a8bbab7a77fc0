import type { Metadata } from 'next';
import { DeadLettersView } from '../../../../../components/topology/DeadLettersView.tsx';

type Props = { params: Promise<{ topic: string; subscription: string }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const { topic, subscription } = await params;
  return { title: `${decodeURIComponent(topic)}/${decodeURIComponent(subscription)} · Dead letters` };
}

export default async function DeadLettersPage({ params }: Props) {
  const { topic, subscription } = await params;
  return <DeadLettersView topic={decodeURIComponent(topic)} subscription={decodeURIComponent(subscription)} />;
}
