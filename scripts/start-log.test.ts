// The prefixed log lines of `npm start`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { componentLogger, formatRecord } from './start-log.ts';

test('a pino record becomes one prefixed line with its fields, secret-named fields dropped', () => {
  const lines: string[] = [];
  const log = componentLogger('demo', 'info', { write: (l) => lines.push(l) });
  log.info(
    {
      endpointId: 'billingendpoint',
      published: 3,
      connectionString: 'Endpoint=sb://x;SharedAccessKey=s',
      accountKey: 'k',
    },
    'demo traffic running',
  );
  log.warn({ err: new Error('boom') }, 'publishing failed');
  log.debug({}, 'not shown at info');
  assert.equal(lines.length, 2);
  assert.match(
    lines[0]!,
    /^\d\d:\d\d:\d\d \[demo\] demo traffic running endpointId=billingendpoint published=3\n$/,
  );
  assert.match(lines[1]!, /\[demo\] WARN publishing failed err="boom"\n$/);
  assert.doesNotMatch(lines.join(''), /SharedAccessKey|accountKey/);
});

test('a line that is not JSON is printed under the prefix as it is', () => {
  assert.equal(formatRecord('console', 'plain text\n'), '[console] plain text\n');
});
