// The logger's safety net: a configuration object (with a connection string, a Cosmos key, a client secret and
// a session secret), request headers with a cookie and a bearer token, and a message with its payload, logged
// by mistake, come out without any of those values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger } from './log.ts';
import { loadConsoleConfig } from './config.ts';

const SECRETS = {
  sasKey: 'c2FzLWtleS1kby1ub3QtbG9n',
  cosmosKey: 'Y29zbW9zLWtleS1kby1ub3QtbG9n',
  clientSecret: 'client~secret~do~not~log',
  sessionSecret: 'session-secret-do-not-log-0123456789-abcdef',
  cookie: 'sealed-session-cookie-value',
  bearer: 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.sig',
  payloadValue: 'card 4111 1111 1111 1111',
};

test('secrets and payloads in a logged object are redacted', () => {
  let out = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      out += chunk.toString('utf8');
      done();
    },
  });
  const log = createLogger({ name: 'test', destination: sink });
  const config = loadConsoleConfig({
    NIMBUS_SERVICEBUS_CONNECTION_STRING: `Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=${SECRETS.sasKey}`,
    NIMBUS_COSMOS_ENDPOINT: 'https://account.documents.azure.com:443/',
    NIMBUS_COSMOS_KEY: SECRETS.cosmosKey,
    NIMBUS_AUTH: 'oidc',
    NIMBUS_AUTH_ISSUER: 'https://login.example/issuer',
    NIMBUS_AUTH_CLIENT_ID: 'console',
    NIMBUS_AUTH_CLIENT_SECRET: SECRETS.clientSecret,
    NIMBUS_AUTH_REDIRECT_URI: 'https://console.example/auth/callback',
    NIMBUS_AUTH_SESSION_SECRET: SECRETS.sessionSecret,
  });
  log.info({ config }, 'configuration');
  log.info({ env: { NIMBUS_COSMOS_KEY: SECRETS.cosmosKey, NIMBUS_AUTH_SESSION_SECRET: SECRETS.sessionSecret } }, 'environment');
  log.warn({ req: { headers: { cookie: `nimbus_session=${SECRETS.cookie}`, authorization: `Bearer ${SECRETS.bearer}`, 'set-cookie': SECRETS.cookie } } }, 'request');
  log.error({ message: { messageId: 'm-1', body: { card: SECRETS.payloadValue } }, event: { payload: { card: SECRETS.payloadValue } } }, 'message');
  const lines = out.trim().split('\n');
  assert.equal(lines.length, 4, 'every line was written');
  for (const [name, value] of Object.entries(SECRETS)) assert.ok(!out.includes(value), `${name} is not in the log output`);
  // What is not secret stays readable.
  const first = JSON.parse(lines[0]!) as { config: { cosmos: { endpoint: string; key: string }; catalogPath: string } };
  assert.equal(first.config.cosmos.endpoint, 'https://account.documents.azure.com:443/');
  assert.equal(first.config.cosmos.key, '[redacted]');
});
