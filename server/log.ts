// The console's structured logger. Never given connection strings, keys or message payloads.
import pino from 'pino';

export const log = pino({
  name: 'console',
  // Quiet under Node's test runner (it sets NODE_TEST_CONTEXT in test processes) unless asked otherwise.
  level: process.env.NIMBUS_LOG_LEVEL ?? (process.env.NODE_TEST_CONTEXT ? 'silent' : 'info'),
});
