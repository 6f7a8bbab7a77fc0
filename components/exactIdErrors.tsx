'use client';
// The refusal of a typed id that the one rule does not take (server/exactIdFilters.ts: spaces alone, longer
// than any id), for every form that takes ids: the Endpoint page's filters and the Audit log's, and the admin forms
// that name an endpoint (Access grants, alert rules). The page's URL state reads such a filter as no filter, so
// applying it would list everything while the box still showed the id (and on the Endpoint page "Select all
// matching" would act on all of it); an admin form trimmed it into another id (spaces alone: a site-wide grant). The
// form is not applied; the box says why beside it, in the route's words, and has the focus.
import { useId, useRef, useState, type ReactNode } from 'react';
import { exactIdProblem, exactIdTargetProblem, type ExactIdFilter } from '../server/exactIdFilters.ts';

/**
 * Which rule a form's boxes follow, in its route's words: a list's `filter` (exactIdProblem), or the `target` a form
 * names for the server to store or act on (exactIdTargetProblem, as the admin routes' exactIdTarget). An empty box
 * is no id there either: the form sends none (a site-wide grant, a rule on every endpoint) or the box is `required`.
 */
export type ExactIdRule = 'filter' | 'target';
const PROBLEM: Record<ExactIdRule, (field: ExactIdFilter, value: string) => string | undefined> = {
  filter: exactIdProblem,
  target: (field, value) => (value === '' ? undefined : exactIdTargetProblem(field, value)),
};

/** What an id box takes: a ref (for the focus) and, while refused, its error state. */
export interface IdBoxProps {
  ref: (el: HTMLInputElement | HTMLSelectElement | null) => void;
  'aria-invalid'?: true;
  'aria-describedby'?: string;
}

export interface ExactIdErrors<F extends ExactIdFilter> {
  /** True when every id of the draft is a filter; else marks the refused boxes and moves the focus to the first. */
  check(draft: Readonly<Record<F, string>>): boolean;
  /** Forgets one box's refusal (it was edited), or every one (the form followed the URL). */
  clear(field?: F): void;
  box(field: F): IdBoxProps;
  /** The words beside a refused box; outside its label, so the box's name stays its label alone. */
  note(field: F): ReactNode;
}

/** The refusals of a form's id boxes, `fields` in the order the form shows them (the first refused gets the focus). */
export function useExactIdErrors<F extends ExactIdFilter>(fields: readonly F[], rule: ExactIdRule = 'filter'): ExactIdErrors<F> {
  const [errors, setErrors] = useState<Partial<Record<F, string>>>({});
  const boxes = useRef(new Map<F, HTMLInputElement | HTMLSelectElement>());
  const prefix = useId();
  const noteId = (field: F) => `${prefix}-${field}-error`;
  return {
    check(draft) {
      const found: Partial<Record<F, string>> = {};
      for (const field of fields) {
        const problem = PROBLEM[rule](field, draft[field]);
        if (problem) found[field] = problem;
      }
      setErrors(found);
      const first = fields.find((field) => found[field]);
      if (first === undefined) return true;
      boxes.current.get(first)?.focus();
      return false;
    },
    clear(field) {
      if (field === undefined) {
        if (Object.values(errors).some(Boolean)) setErrors({});
      } else if (errors[field]) setErrors({ ...errors, [field]: undefined });
    },
    box(field) {
      const ref = (el: HTMLInputElement | HTMLSelectElement | null) => {
        if (el) boxes.current.set(field, el);
        else boxes.current.delete(field);
      };
      return errors[field] ? { ref, 'aria-invalid': true, 'aria-describedby': noteId(field) } : { ref };
    },
    note(field) {
      const message = errors[field];
      // role="alert": pressing Enter in the box that already has the focus moves nothing, so the refusal is announced.
      return message ? (
        <span id={noteId(field)} role="alert" className="text-xs text-red-700">
          {message}
        </span>
      ) : null;
    },
  };
}
