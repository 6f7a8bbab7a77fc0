// "Evidence unknown": an endpoint whose probe is overdue and whose last answer could not be read (a throttled or
// failing store), so nobody knows whether it is busy or silent; the server leaves the probe Pending and keeps trying,
// up to a bound (server/heartbeat/evidence.ts). One component for Admin → Health, the Endpoints page and Monitor, so
// the words and their explanation cannot drift apart: in words, with the full story in the title, so the meaning
// does not rest on the colour.

export function EvidenceUnknown({ className = 'block text-xs text-slate-700' }: { className?: string }) {
  return (
    <span
      className={className}
      data-heartbeat-evidence-unknown
      title="The endpoint's last answer could not be read from the store, so it is not known whether it is busy or silent. The probe stays Pending while the check is retried; if it stays unreadable for two timeouts past the probe's deadline (or past the last answer seen, if later), the probe turns Off."
    >
      Evidence unknown — busy check failed, retrying
    </span>
  );
}
