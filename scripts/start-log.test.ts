// The prefixed log lines of `npm start`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { log, setConsoleLogSink } from '../server/log.ts';
import type * as consoleLog from '../server/log.ts';
import { componentLogger, emulatorLogger, formatRecord, recordPrinter } from './start-log.ts';

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

test("the emulator's records: at info only its warnings and errors, at debug all of them", () => {
  const lines: string[] = [];
  const sink = { write: (l: string) => lines.push(l) };
  const atInfo = emulatorLogger(componentLogger('emulator', 'info', sink));
  atInfo.info({}, 'topic created');
  atInfo.warn({}, 'journal ends with a partial record');
  atInfo.error({}, 'journal is corrupt in the middle');
  const atDebug = emulatorLogger(componentLogger('emulator', 'debug', sink));
  atDebug.debug({}, 'messages sent');
  assert.deepEqual(
    lines.map((l) => l.slice(9)),
    [
      '[emulator] WARN journal ends with a partial record\n',
      '[emulator] ERROR journal is corrupt in the middle\n',
      '[emulator] DEBUG messages sent\n',
    ],
  );
});

test("the emulator's sub-component (its child loggers' component field) is named before the message", () => {
  // startEmulator gives its broker, AMQP plane, admin plane and server each a child logger with a component field;
  // the start log dropped that field, so an [emulator] warning did not say where in the emulator it came from.
  const lines: string[] = [];
  const log = emulatorLogger(componentLogger('emulator', 'info', { write: (l) => lines.push(l) }));
  log.child({ component: 'broker' }).warn({ line: 4 }, 'journal ends with a partial record');
  log.child({ component: 'amqp' }).error({}, 'frame too large');
  log.child({ component: 'amqp' }).info({}, 'link attached');
  log.warn({}, 'SAS checks are off');
  assert.deepEqual(
    lines.map((l) => l.slice(9)),
    [
      '[emulator] WARN broker: journal ends with a partial record line=4\n',
      '[emulator] ERROR amqp: frame too large\n',
      '[emulator] WARN SAS checks are off\n',
    ],
  );
});

test('a line that is not JSON is printed under the prefix as it is', () => {
  assert.equal(formatRecord('console', 'plain text\n'), '[console] plain text\n');
});

test("the console's own log (server/log.ts), in every loaded copy, prints as [console] lines once routed", async () => {
  // Next.js loads its own copies of server/log.ts (route chunks, the instrumentation hook); a second import under
  // another URL is such a copy. Before, their records went to stdout as bare JSON amid the prefixed lines.
  const copy = (await import(new URL('../server/log.ts?bundled-copy', import.meta.url).href)) as typeof consoleLog;
  assert.notEqual(copy.log, log, 'a separate module instance');
  const lines: string[] = [];
  const levels = [log.level, copy.log.level];
  log.level = copy.log.level = 'info'; // silent under the test runner otherwise
  setConsoleLogSink(recordPrinter('console', { write: (l) => lines.push(l) }));
  try {
    log.info({ jobs: 2 }, 'bulk operations runner started');
    copy.log.warn({ key: 'k-secret' }, 'heartbeat scheduler not started yet');
  } finally {
    setConsoleLogSink(undefined);
    [log.level, copy.log.level] = levels as [string, string];
  }
  assert.deepEqual(
    lines.map((l) => l.replace(/^\d\d:\d\d:\d\d /, '')),
    ['[console] bulk operations runner started jobs=2\n', '[console] WARN heartbeat scheduler not started yet\n'],
  );
});
