// The note beside the event type in "Resubmit with changes": what the edited payload is checked against. A pure
// function of what is known so far, so its wording is tested directly (schemaNote.test.ts).

/**
 * The schema of the chosen type as the dialog knows it: a compiled schema (`'schema'`), none in the catalog
 * (`'none'`), or not known yet (`'pending'`: the catalog or the checker modules have not arrived).
 */
export type SchemaState = 'schema' | 'none' | 'pending';

export function schemaNote(input: {
  catalogError: boolean;
  catalogLoaded: boolean;
  schema: SchemaState;
  eventTypeId: string;
}): string {
  if (input.catalogError) return 'The catalog could not be read: the server checks the schema when you send.';
  if (!input.catalogLoaded) return 'Loading the catalog…';
  // Until the checker modules are in, the schema is not compiled: "no schema" here would be a guess, and wrong for
  // every type that has one (it would turn into "Checked against…" seconds later).
  if (input.schema === 'pending') return 'Loading the schema…';
  if (input.schema === 'schema')
    return `Checked against the ${input.eventTypeId} JSON schema in the catalog.`;
  return `${input.eventTypeId} has no JSON schema in the catalog: any JSON is accepted.`;
}
