import { Suspense } from 'react';
import { FlowView } from '../../components/FlowView.tsx';

export default function FlowPage() {
  return (
    <Suspense fallback={<p className="text-sm text-slate-500">Loading…</p>}>
      <FlowView />
    </Suspense>
  );
}
