// A message id as an operator reads it: a copy the platform made (`{source}~parked~replayed`) shows its source id
// and a small "parked → replayed" tag; the exact id stays in the title, in data-message-id and in the copy button,
// so nothing of it is lost. Any other id is shown as it is.
import { CopyButton } from './payload/CopyButton.tsx';
import { messageIdParts } from './messageIdParts.ts';

export function MessageId({ id }: { id: string }) {
  const { base, copies, hashed } = messageIdParts(id);
  if (copies.length === 0) return <>{id}</>;
  return (
    <span className="inline-flex max-w-full items-center gap-1 align-middle" data-message-id={id} title={id}>
      <span className="truncate">{base}</span>
      <span className="shrink-0 rounded bg-slate-100 px-1 font-sans text-slate-600">
        {copies.join(' → ')}
        {hashed ? ' (of a hashed id)' : ''}
      </span>
      <CopyButton text={id} what="Message id" />
    </span>
  );
}
