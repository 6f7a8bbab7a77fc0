// A job's title in words, for the Jobs drawer and the audit's readers: the failure group's title ("skip: CRM API
// answered <n> Service Unavailable…") rather than its hash, with the endpoint(s) it acts on. Fixed when the job
// is created (the group's title does not change, and the list then needs no read per job).
import type { Database } from '@azure/cosmos';
import { failureGroupsContainer, type FailureGroupDoc } from '../../lib/store/failureGroupAggregates.ts';
import type { JobKind } from './jobs.ts';
import type { SelectedRow, Selection } from './selection.ts';

const MAX_TITLE = 160;

/** The selection's filters in short (the title of a job whose group title cannot be read, and of older jobs). */
export function describeSelection(kind: JobKind, s: Selection): string {
  const parts = [s.groupId ? `group ${s.groupId.slice(0, 8)}` : null, s.endpointId ?? null, s.status?.join('+') ?? null, s.eventTypeId ?? null].filter(Boolean);
  return `${kind} ${parts.join(' · ') || 'selection'}`;
}

/** "skip: <group title> · crmendpoint" (a group), else the filters; never longer than MAX_TITLE. */
export function titleFor(kind: JobKind, selection: Selection, endpoints: readonly string[], groupTitle: string | null): string {
  if (!groupTitle) return describeSelection(kind, selection);
  const where = endpoints.length === 1 ? endpoints[0]! : `${endpoints.length} endpoints`;
  const extra = [selection.status?.join('+'), selection.eventTypeId].filter(Boolean).join(' · ');
  const tail = ` · ${where}${extra ? ` · ${extra}` : ''}`;
  const room = MAX_TITLE - kind.length - 2 - tail.length;
  const text = groupTitle.length > room ? `${groupTitle.slice(0, Math.max(10, room - 1))}…` : groupTitle;
  return `${kind}: ${text}${tail}`;
}

/** The job's title, reading the group's title from its aggregate (best effort: the filters when it cannot). */
export async function jobTitle(database: Database, kind: JobKind, selection: Selection, rows: readonly SelectedRow[]): Promise<string> {
  const endpoints = [...new Set(rows.map((r) => r.endpointId))].sort();
  let groupTitle: string | null = null;
  if (selection.groupId && rows[0]) {
    try {
      const container = await failureGroupsContainer(database);
      const { resource } = await container.item(selection.groupId, rows[0].endpointId).read<FailureGroupDoc>();
      groupTitle = resource?.title?.trim() || null;
    } catch {
      groupTitle = null; // a title is not worth failing the job for
    }
  }
  return titleFor(kind, selection, endpoints, groupTitle);
}
