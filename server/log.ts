// The console's structured logger. Never given connection strings, keys or message payloads.
import pino from 'pino';

export const log = pino({
  name: 'console',
  level: process.env.NIMBUS_LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'silent' : 'info'),
});
