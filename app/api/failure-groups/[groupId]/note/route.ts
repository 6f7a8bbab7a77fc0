// PUT /api/failure-groups/{groupId}/note with `{ note }`: sets the note everybody sees on the group (an empty text
// clears it). A site-wide Operator's act (a group spans endpoints), audited with the text.
import { audited, authorize } from '../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../server/context.ts';
import { groupIdSchema, groupNoteBody, setGroupNote } from '../../../../../server/failures/notes.ts';
import { getOpsServices } from '../../../../../server/heartbeat/services.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function PUT(request: Request, context: RouteContext<{ groupId: string }>): Promise<Response> {
  return handle(async () => {
    const groupId = parseOr400(groupIdSchema, (await context.params).groupId, 'group id');
    const who = await authorize(request, 'failures.note', undefined, { target: `failure-group/${groupId}` });
    const body = await readJsonBody(request, groupNoteBody);
    const ctx = await getContext();
    const note = await audited(who, () => setGroupNote(getOpsServices(ctx).docs, groupId, body.note, who.user), { groupId, note: body.note });
    return json({ groupId, note });
  });
}
