import { MonitorView } from '../../components/MonitorView.tsx';

export default function MonitorPage() {
  return <MonitorView />;
}
