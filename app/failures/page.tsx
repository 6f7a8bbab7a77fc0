import { FailuresView } from '../../components/operations/FailuresView.tsx';

export default function FailuresPage() {
  return <FailuresView />;
}
