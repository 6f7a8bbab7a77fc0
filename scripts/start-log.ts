// Readable, prefixed log lines for `npm start`: every part logs through pino (structured, as everywhere else),
// and this destination prints each record as "12:00:01 [demo] message key=value", or "[emulator] WARN broker:
// message" when the record names a sub-component of the part. Fields named like secrets are dropped as a second
// line of defence; no part logs payloads or connection strings in the first place.
import { pino, type Logger } from 'pino';

export type Component = 'start' | 'emulator' | 'cosmos' | 'provision' | 'resolver' | 'demo' | 'console';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const COLORS: Record<Component, number> = {
  start: 37,
  emulator: 36,
  cosmos: 35,
  provision: 34,
  resolver: 33,
  demo: 32,
  console: 96,
};
const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
const OMIT = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name', 'component']);
const SECRET = /key|secret|token|password|connectionstring|signature/i;

export interface LineSink {
  write(line: string): void;
}

const stdoutSink: LineSink = { write: (line) => process.stdout.write(line) };

/** "[demo]", coloured when the sink is a terminal. */
export function prefix(component: Component, color = process.stdout.isTTY === true): string {
  const tag = `[${component}]`;
  return color ? `\u001b[${COLORS[component]}m${tag}\u001b[0m` : tag;
}

function formatValue(value: unknown): string {
  if (value instanceof Error) return JSON.stringify(value.message);
  if (typeof value === 'string') return /\s|=|"/.test(value) ? JSON.stringify(value) : value;
  if (
    value &&
    typeof value === 'object' &&
    'message' in value &&
    typeof (value as { message: unknown }).message === 'string'
  ) {
    return JSON.stringify((value as { message: string }).message);
  }
  return JSON.stringify(value);
}

/** One pino JSON record as a readable line. */
export function formatRecord(component: Component, json: string, color = false): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return `${prefix(component, color)} ${json.trimEnd()}\n`;
  }
  const time = new Date(typeof record.time === 'number' ? record.time : Date.now())
    .toISOString()
    .slice(11, 19);
  const level = LEVEL_NAMES[Number(record.level)];
  // A part's own sub-component (the emulator's child loggers: broker, amqp, admin, server) says where in the part
  // the record comes from; dropped, an [emulator] warning would not say which of them to look at.
  const sub = typeof record.component === 'string' && record.component !== '' ? `${record.component}: ` : '';
  const fields = Object.entries(record)
    .filter(([k, v]) => !OMIT.has(k) && !SECRET.test(k) && v !== undefined)
    .map(([k, v]) => `${k}=${formatValue(v)}`);
  const parts = [
    time,
    prefix(component, color),
    ...(level ? [level] : []),
    `${sub}${String(record.msg ?? '')}`,
    ...fields,
  ];
  return `${parts.join(' ')}\n`;
}

/** Prints each pino JSON record it is given as a readable line under the part's prefix. */
export function recordPrinter(component: Component, sink: LineSink = stdoutSink): (json: string) => void {
  const color = sink === stdoutSink && process.stdout.isTTY === true;
  return (json) => sink.write(formatRecord(component, json, color));
}

/** A pino logger for one part of the stack, printing readable prefixed lines. */
export function componentLogger(component: Component, level: LogLevel, sink: LineSink = stdoutSink): Logger {
  const print = recordPrinter(component, sink);
  return pino({ level, base: undefined }, { write: print });
}

/**
 * The Service Bus emulator's own records under `npm start`, as the [emulator] part. At 'info' they would repeat
 * what the stack says itself (ready, stopped) and add a line per topic and subscription provisioned, so an 'info'
 * start log takes only the emulator's warnings and errors: a journal damaged in the middle, a stored message that
 * cannot be decoded, a torn last journal line. 'debug' asks for everything; 'warn' and 'error' apply as they are.
 */
export function emulatorLogger(parent: Logger): Logger {
  return parent.level === 'info' ? parent.child({}, { level: 'warn' }) : parent;
}

/** Prints a child process's output (e.g. `next build`) line by line under a prefix. */
export function pipeLines(
  component: Component,
  stream: NodeJS.ReadableStream,
  sink: LineSink = stdoutSink,
): void {
  let buffered = '';
  const color = sink === stdoutSink && process.stdout.isTTY === true;
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) if (line.trim() !== '') sink.write(`${prefix(component, color)} ${line}\n`);
  });
  stream.on('end', () => {
    if (buffered.trim() !== '') sink.write(`${prefix(component, color)} ${buffered}\n`);
  });
}
