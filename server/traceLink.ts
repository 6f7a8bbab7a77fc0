// The link from an event to its trace: NIMBUS_TRACE_URL_TEMPLATE names the tracing UI's trace page with a
// `{traceId}` placeholder (Jaeger: https://jaeger.example.com/trace/{traceId}; Application Insights: a portal URL
// with the operation id). Unset or unusable: the trace id is shown without a link.

const PLACEHOLDER = '{traceId}';

/** The template when it is usable: contains {traceId} and makes an http(s) URL. */
export function traceUrlTemplate(env: Record<string, string | undefined> = process.env): string | undefined {
  const t = (env.NIMBUS_TRACE_URL_TEMPLATE ?? '').trim();
  if (t === '' || !t.includes(PLACEHOLDER)) return undefined;
  try {
    const u = new URL(t.replaceAll(PLACEHOLDER, '0'.repeat(32)));
    return u.protocol === 'https:' || u.protocol === 'http:' ? t : undefined;
  } catch {
    return undefined;
  }
}

/** The trace's URL, or null without a usable template or for something that is not a W3C trace id. */
export function traceUrl(traceId: string | null | undefined, template: string | undefined = traceUrlTemplate()): string | null {
  if (!template || !traceId || !/^[0-9a-f]{32}$/.test(traceId)) return null;
  return template.replaceAll(PLACEHOLDER, traceId);
}
