// Reading the catalog file. Kept apart from the schema because it needs node:fs, and the schema is also used
// where there is no file system (the browser).
import { readFile } from 'node:fs/promises';
import { describeIssues } from './envelope.ts';
import { catalogSchema, type Catalog } from './catalogSchema.ts';

export class CatalogError extends Error {
  override readonly name = 'CatalogError';
}

/** Validates an already-parsed catalog; throws CatalogError listing every problem with its path. */
export function parseCatalog(value: unknown, source = 'catalog'): Catalog {
  const parsed = catalogSchema.safeParse(value);
  if (!parsed.success) throw new CatalogError(`${source} is invalid: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/** Reads and validates a catalog file; every failure (missing file, bad JSON, bad content) is a CatalogError. */
export async function loadCatalog(path: string): Promise<Catalog> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CatalogError(
      code === 'ENOENT' ? `catalog file not found: ${path}` : `cannot read catalog file ${path}: ${code ?? String(error)}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CatalogError(`catalog file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  return parseCatalog(value, `catalog file ${path}`);
}
