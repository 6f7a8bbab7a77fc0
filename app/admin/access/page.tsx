import type { Metadata } from 'next';
import { AccessView } from '../../../components/audit/AccessView.tsx';

export const metadata: Metadata = { title: 'Admin · Access' };

export default function AccessPage() {
  return <AccessView />;
}
