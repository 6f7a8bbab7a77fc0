import { EndpointsView } from '../components/EndpointsView.tsx';

export default function EndpointsPage() {
  return <EndpointsView />;
}
