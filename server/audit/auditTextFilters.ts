// How long the Audit log's free-text filters may be, in one place for the route (./auditLog.ts auditQuerySchema),
// the page's URL state (components/urlState.ts) and the page's filter boxes (components/audit/AuditView.tsx). They
// were written apart and drifted: the URL state took 100 characters of an action while the route took 64, so a link
// with 65 to 100 answered 400 in the page's error box. Free of zod and of the store, for the pages' first-load bundle.

/** The longest value each free-text filter takes (trimmed: these are typed text, not ids). */
export const AUDIT_TEXT_FILTER_MAX = { user: 256, action: 64, notAction: 200 } as const;
