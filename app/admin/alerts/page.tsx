import type { Metadata } from 'next';
import { AlertsAdminView } from '../../../components/admin/AlertsAdminView.tsx';
import { Prefetched } from '../../../components/prefetch.tsx';
import { alertRulesQuery } from '../../../components/queries.ts';
import { readAlertRules } from '../../../server/reads.ts';

export const metadata: Metadata = { title: 'Admin · Alert rules' };

export default function AlertsAdminPage() {
  return (
    <Prefetched reads={[{ key: alertRulesQuery().queryKey, read: readAlertRules }]}>
      <AlertsAdminView />
    </Prefetched>
  );
}
