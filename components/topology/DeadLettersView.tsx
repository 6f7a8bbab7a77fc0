'use client';
// The dead-letter browser of one subscription: peek with paging, filter by reason, each dead letter's reason,
// description, enqueued time, delivery count, application properties and body (rendered as text: React escapes
// it). Replay of the selected dead letters or of all matching the filter goes preview → confirm → progress →
// result; purge asks for the typed subscription name.
import Link from 'next/link';
import { useEffect, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ConfirmDialog } from '../ConfirmDialog.tsx';
import { ErrorBox, Timestamp } from '../format.tsx';
import { opsApi, type ReplayOperation, type ReplayPreview, type ReplaySelection } from './opsApi.ts';
import { TypedConfirmDialog } from './TypedConfirmDialog.tsx';

const PAGE_SIZE = 25;

export function DeadLettersView({ topic, subscription }: { topic: string; subscription: string }) {
  const client = useQueryClient();
  const [reasonInput, setReasonInput] = useState('');
  const [reason, setReason] = useState('');
  // Cursor stack: the first sequence number of every page visited, for "previous".
  const [cursors, setCursors] = useState<string[]>(['']);
  const from = cursors[cursors.length - 1] ?? '';
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [preview, setPreview] = useState<{ selection: ReplaySelection; result: ReplayPreview } | null>(null);
  const [operationId, setOperationId] = useState<string | null>(null);
  const [purging, setPurging] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);

  const key = ['deadletters', topic, subscription, reason, from];
  const q = useQuery({
    queryKey: key,
    queryFn: () => opsApi.deadLetters(topic, subscription, { from: from || undefined, reason: reason || undefined, pageSize: PAGE_SIZE }),
    refetchInterval: operationId ? false : 15_000,
  });
  const refresh = () => void client.invalidateQueries({ queryKey: ['deadletters', topic, subscription] });

  const previewMutation = useMutation({
    mutationFn: (selection: ReplaySelection) => opsApi.previewReplay(topic, subscription, selection).then((result) => ({ selection, result })),
    onSuccess: (p) => setPreview(p),
  });
  const start = useMutation({
    mutationFn: (selection: ReplaySelection) => opsApi.replay(topic, subscription, selection),
    onSuccess: (r) => {
      setPreview(null);
      setSelected(new Set());
      setOperationId(r.operationId);
    },
  });
  const op = useQuery({
    queryKey: ['operation', operationId],
    queryFn: () => opsApi.operation(operationId!),
    enabled: operationId !== null,
    refetchInterval: (query) => (query.state.data && query.state.data.state !== 'running' ? false : 1000),
  });
  const finished = op.data !== undefined && op.data.state !== 'running';
  useEffect(() => {
    // The list is stale once the replay ends: read it again.
    if (finished) void client.invalidateQueries({ queryKey: ['deadletters', topic, subscription] });
  }, [finished, client, topic, subscription]);
  const purge = useMutation({
    mutationFn: (typed: string) => opsApi.action(topic, subscription, 'purge', typed),
    onSuccess: (r) => {
      setPurging(false);
      setNotice(`Purged ${String(r.purged)} dead letters.`);
      refresh();
    },
  });

  const items = q.data?.items ?? [];
  const toggle = (seq: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(seq)) n.delete(seq);
      else n.add(seq);
      return n;
    });

  return (
    <section>
      <p className="mb-1 text-sm">
        <Link href="/topology/subscriptions" className="text-sky-700 hover:underline">
          Topology · Subscriptions
        </Link>
      </p>
      <h1 className="mb-3 text-xl font-semibold">
        Dead letters · {topic} / {subscription}
      </h1>
      <form
        className="mb-3 flex flex-wrap items-center gap-2"
        onSubmit={(e) => {
          e.preventDefault();
          setReason(reasonInput.trim());
          setCursors(['']);
          setSelected(new Set());
        }}
      >
        <input
          aria-label="Filter by reason"
          value={reasonInput}
          onChange={(e) => setReasonInput(e.target.value)}
          placeholder="Dead-letter reason (exact), e.g. CosmosDbThrottled"
          className="w-80 rounded border border-slate-300 px-2 py-1 text-sm"
        />
        <button type="submit" className="rounded border border-slate-300 px-2 py-1 text-sm hover:bg-slate-50">
          Filter
        </button>
        <div className="ml-auto flex gap-2">
          <button
            type="button"
            disabled={selected.size === 0 || previewMutation.isPending || (operationId !== null && !finished)}
            onClick={() => previewMutation.mutate({ sequenceNumbers: [...selected] })}
            className="rounded bg-sky-600 px-3 py-1 text-sm font-medium text-white hover:bg-sky-700 disabled:opacity-50"
          >
            Replay selected ({selected.size})
          </button>
          <button
            type="button"
            disabled={items.length === 0 || previewMutation.isPending}
            onClick={() => previewMutation.mutate({ all: true, ...(reason ? { reason } : {}) })}
            className="rounded border border-sky-600 px-3 py-1 text-sm text-sky-700 hover:bg-sky-50 disabled:opacity-50"
          >
            Replay all{reason ? ` with reason ${reason}` : ''}
          </button>
          <button type="button" onClick={() => setPurging(true)} className="rounded border border-red-300 px-3 py-1 text-sm text-red-700 hover:bg-red-50">
            Purge…
          </button>
        </div>
      </form>
      <ErrorBox error={q.error ?? previewMutation.error ?? start.error ?? op.error} />
      {notice && (
        <p role="status" className="mb-2 rounded border border-emerald-200 bg-emerald-50 px-3 py-2 text-sm text-emerald-800">
          {notice}
        </p>
      )}
      {op.data && <ReplayProgress op={op.data} onClose={() => setOperationId(null)} />}
      {q.isLoading ? (
        <p className="text-sm text-slate-500">Loading…</p>
      ) : items.length === 0 ? (
        <p className="rounded border border-slate-200 bg-white px-3 py-6 text-center text-sm text-slate-500">No dead letters{reason ? ` with reason ${reason}` : ''}.</p>
      ) : (
        <ul className="space-y-2">
          {items.map((d) => (
            <li key={d.sequenceNumber} className="rounded border border-slate-200 bg-white p-3 text-sm" data-dead-letter={d.messageId ?? ''}>
              <div className="flex flex-wrap items-center gap-3">
                <input type="checkbox" aria-label={`Select dead letter ${d.sequenceNumber}`} checked={selected.has(d.sequenceNumber)} onChange={() => toggle(d.sequenceNumber)} />
                <span className="font-mono text-xs text-slate-500">#{d.sequenceNumber}</span>
                <span className="font-mono text-xs">{d.messageId}</span>
                <span className="rounded bg-rose-100 px-1.5 py-0.5 text-xs font-medium text-rose-900">{d.reason ?? 'no reason'}</span>
                <span className="text-xs text-slate-500">
                  delivered {d.deliveryCount ?? '?'}× · <Timestamp at={d.enqueuedAt} />
                </span>
                {d.sessionId && <span className="text-xs text-slate-500">session {d.sessionId}</span>}
              </div>
              {d.description && <p className="mt-1 whitespace-pre-wrap text-slate-700">{d.description}</p>}
              <details className="mt-1">
                <summary className="cursor-pointer text-xs text-sky-700">Properties and body</summary>
                <pre className="mt-1 max-h-48 overflow-auto rounded bg-slate-50 p-2 text-xs">{JSON.stringify(d.applicationProperties, null, 2)}</pre>
                <pre className="mt-1 max-h-64 overflow-auto whitespace-pre-wrap break-all rounded bg-slate-50 p-2 text-xs" data-body>
                  {d.bodyEncoding === 'base64' ? `(binary, base64) ${d.body}` : d.body}
                </pre>
              </details>
            </li>
          ))}
        </ul>
      )}
      <div className="mt-3 flex gap-2">
        <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors((c) => c.slice(0, -1))} className="rounded border border-slate-300 px-2 py-1 text-sm disabled:opacity-40">
          Previous
        </button>
        <button
          type="button"
          disabled={!q.data?.next || items.length < PAGE_SIZE}
          onClick={() => q.data?.next && setCursors((c) => [...c, q.data!.next!])}
          className="rounded border border-slate-300 px-2 py-1 text-sm disabled:opacity-40"
        >
          Next
        </button>
      </div>
      {preview && (
        <ConfirmDialog
          title={`Replay ${preview.result.count}${preview.result.truncated ? '+' : ''} dead letter${preview.result.count === 1 ? '' : 's'}`}
          confirmLabel={`Replay ${preview.result.count}`}
          busy={start.isPending || preview.result.count === 0}
          onCancel={() => setPreview(null)}
          onConfirm={() => start.mutate(preview.selection)}
        >
          <p>
            Each is received under a lock, sent again to topic <b>{topic}</b> with the same MessageId and without ThrottleRetryCount,
            DeadLetterReason and DeadLetterErrorDescription, then removed from the dead-letter queue. A failed send leaves it in place.
          </p>
          {preview.result.alsoReaches.length > 0 ? (
            <div className="mt-2 rounded border border-amber-200 bg-amber-50 p-2">
              The copies also reach other subscriptions of {topic}:
              <ul className="list-disc pl-5">
                {preview.result.alsoReaches.map((r) => (
                  <li key={r.subscription}>
                    <b>{r.subscription}</b>: {r.count} {r.certain ? '' : '(rules not fully evaluable: may match)'}
                  </li>
                ))}
              </ul>
            </div>
          ) : (
            <p className="mt-2">No other subscription of {topic} receives the copies.</p>
          )}
          {preview.result.truncated && <p className="mt-2 text-amber-800">More dead letters match than one replay handles; run it again afterwards.</p>}
        </ConfirmDialog>
      )}
      {purging && (
        <TypedConfirmDialog
          title={`Purge the dead-letter queue of ${topic}/${subscription}`}
          expected={subscription}
          confirmLabel="Purge"
          busy={purge.isPending}
          onCancel={() => setPurging(false)}
          onConfirm={(typed) => purge.mutate(typed)}
        >
          Every dead letter of this subscription is deleted. This cannot be undone.
          <ErrorBox error={purge.error} />
        </TypedConfirmDialog>
      )}
    </section>
  );
}

function ReplayProgress({ op, onClose }: { op: ReplayOperation; onClose: () => void }) {
  const running = op.state === 'running' && !op.interrupted;
  const tone = running ? 'border-sky-200 bg-sky-50 text-sky-900' : op.failed > 0 || op.interrupted ? 'border-amber-200 bg-amber-50 text-amber-900' : 'border-emerald-200 bg-emerald-50 text-emerald-900';
  return (
    <div role="status" className={`mb-3 flex flex-wrap items-center gap-3 rounded border px-3 py-2 text-sm ${tone}`} data-replay-state={op.state}>
      <b>{running ? 'Replaying…' : op.interrupted ? 'Replay interrupted' : op.state === 'done' ? 'Replay finished' : 'Replay failed'}</b>
      <span>{op.replayed} replayed</span>
      {op.failed > 0 && <span>{op.failed} failed (left in the queue)</span>}
      {op.notCompleted > 0 && <span>{op.notCompleted} sent but not removed (lock lost)</span>}
      {op.error && <span className="text-xs">{op.error}</span>}
      {!running && (
        <button type="button" onClick={onClose} className="ml-auto text-xs underline">
          Dismiss
        </button>
      )}
    </div>
  );
}
