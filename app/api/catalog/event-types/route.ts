// GET /api/catalog/event-types: every event type of the catalog with its description, session key and JSON schema.
// The console's edit-and-resubmit editor checks a payload against the schema before it sends (the resubmit route
// checks again); the catalog stays the one source of the schemas. Any role: it is the catalog's documentation.
import { authorize } from '../../../../server/auth/authorize.ts';
import { getContext } from '../../../../server/context.ts';
import { handle, json } from '../../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authorize(request, 'read');
    const ctx = await getContext();
    return json({
      eventTypes: ctx.catalog.eventTypes.map((t) => ({
        id: t.id,
        description: t.description ?? null,
        sessionKey: t.sessionKey ?? null,
        schema: t.schema ?? null,
      })),
    });
  });
}
