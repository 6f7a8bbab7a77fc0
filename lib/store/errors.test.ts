import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
// esbuild comes with tsx (a pinned dev dependency); used here only to minify one module as a production bundle does.
import { transform } from 'esbuild';

// The console's production bundle minifies class names (`class n extends t`). server/http.ts maps a store error
// thrown by another bundled copy of this module by its `name`, so the names must survive minification.
test('store errors keep their names when the module is minified', async () => {
  const source = await readFile(new URL('./errors.ts', import.meta.url), 'utf8');
  const { code } = await transform(source, { loader: 'ts', format: 'esm', minify: true });
  const minified = (await import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`)) as Record<
    string,
    new (...args: never[]) => Error
  >;
  const made: Record<string, Error> = {
    StoreError: new (minified.StoreError as unknown as new (m: string, t: boolean) => Error)('m', false),
    StoreThrottledError: new (minified.StoreThrottledError as unknown as new (o: string, r?: number) => Error)('read'),
    StoreTransientError: new (minified.StoreTransientError as unknown as new (m: string) => Error)('m'),
    CorruptDocumentError: new (minified.CorruptDocumentError as unknown as new (c: string, d: string, i: string) => Error)(
      'c',
      'd',
      'i',
    ),
    StoreInputError: new (minified.StoreInputError as unknown as new (m: string) => Error)('m'),
  };
  for (const [name, err] of Object.entries(made)) assert.equal(err.name, name);
});
