import type { Metadata } from 'next';
import { FailuresView } from '../../components/operations/FailuresView.tsx';

export const metadata: Metadata = { title: 'Failures' };

export default function FailuresPage() {
  return <FailuresView />;
}
