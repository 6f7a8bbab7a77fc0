import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConsoleConfig } from './config.ts';

const valid = {
  NIMBUS_SERVICEBUS_CONNECTION_STRING: 'Endpoint=sb://127.0.0.1:5672;SharedAccessKeyName=Root;SharedAccessKey=s3cr3t-value',
  NIMBUS_COSMOS_ENDPOINT: 'http://127.0.0.1:8081',
  NIMBUS_COSMOS_KEY: 'c29tZS1zZWNyZXQta2V5',
};

describe('console configuration', () => {
  test('defaults the database, catalog and auth mode', () => {
    const c = loadConsoleConfig(valid);
    assert.equal(c.cosmos.database, 'nimbus');
    assert.equal(c.catalogPath, 'catalog/demo.json');
    assert.equal(c.auth, 'off');
    assert.equal(c.background, true, 'background duties run unless turned off');
  });

  test('NIMBUS_BACKGROUND off (0, false, no) turns the background duties off', () => {
    for (const off of ['off', ' OFF ', '0', 'false', 'no']) assert.equal(loadConsoleConfig({ ...valid, NIMBUS_BACKGROUND: off }).background, false, off);
    assert.equal(loadConsoleConfig({ ...valid, NIMBUS_BACKGROUND: 'on' }).background, true);
  });

  test('missing settings give one message naming every missing variable', () => {
    assert.throws(
      () => loadConsoleConfig({ NIMBUS_COSMOS_KEY: '' }),
      (e: unknown) =>
        e instanceof ConfigError &&
        /NIMBUS_SERVICEBUS_CONNECTION_STRING or NIMBUS_SERVICEBUS_NAMESPACE is not set/.test(e.message) &&
        /NIMBUS_COSMOS_ENDPOINT: .*not set/.test(e.message),
    );
  });

  test('bad values are named without echoing them (they may be secrets)', () => {
    const secret = 'SharedAccessKey=very-secret';
    assert.throws(
      () => loadConsoleConfig({ ...valid, NIMBUS_SERVICEBUS_CONNECTION_STRING: secret, NIMBUS_COSMOS_ENDPOINT: 'not a url', NIMBUS_AUTH: 'maybe' }),
      (e: unknown) =>
        e instanceof ConfigError &&
        !e.message.includes('very-secret') &&
        /no Endpoint=sb:\/\//.test(e.message) &&
        /NIMBUS_COSMOS_ENDPOINT/.test(e.message) &&
        /NIMBUS_AUTH/.test(e.message),
    );
  });

  test('NIMBUS_STOP_GRACE_MS is one of the settings: a bad value is named in the ConfigError, a good one read, unset the default', () => {
    assert.equal(loadConsoleConfig(valid).stopGraceMs, 8_000);
    assert.equal(loadConsoleConfig({ ...valid, NIMBUS_STOP_GRACE_MS: '20000' }).stopGraceMs, 20_000);
    // Spaces alone are unset, as the stop reads them (a compose file's `NIMBUS_STOP_GRACE_MS= `): refused as 0 before.
    assert.equal(loadConsoleConfig({ ...valid, NIMBUS_STOP_GRACE_MS: '  ' }).stopGraceMs, 8_000);
    for (const bad of ['soon', '1.5', '50', '700000'])
      assert.throws(
        () => loadConsoleConfig({ ...valid, NIMBUS_STOP_GRACE_MS: bad, NIMBUS_AUTH: 'maybe' }),
        (e: unknown) => e instanceof ConfigError && /NIMBUS_STOP_GRACE_MS: /.test(e.message) && /NIMBUS_AUTH/.test(e.message),
        bad,
      );
  });

  test('NIMBUS_JOB_RETENTION_DAYS is one of the settings: whole days from 1 to 3650, unset (or spaces) the default of 30, a bad value named in the ConfigError', () => {
    assert.equal(loadConsoleConfig(valid).jobRetentionDays, 30);
    assert.equal(loadConsoleConfig({ ...valid, NIMBUS_JOB_RETENTION_DAYS: ' ' }).jobRetentionDays, 30);
    assert.equal(loadConsoleConfig({ ...valid, NIMBUS_JOB_RETENTION_DAYS: '7' }).jobRetentionDays, 7);
    assert.equal(loadConsoleConfig({ ...valid, NIMBUS_JOB_RETENTION_DAYS: '3650' }).jobRetentionDays, 3650);
    for (const bad of ['0', '-1', '1.5', 'month', '3651'])
      assert.throws(
        () => loadConsoleConfig({ ...valid, NIMBUS_JOB_RETENTION_DAYS: bad, NIMBUS_AUTH: 'maybe' }),
        (e: unknown) => e instanceof ConfigError && /NIMBUS_JOB_RETENTION_DAYS: /.test(e.message) && /NIMBUS_AUTH/.test(e.message),
        bad,
      );
  });

  test('NIMBUS_EMULATOR_TLS_PORT (the emulator AMQPS port, never an alert target): a port, or unset; a bad value is named', () => {
    for (const good of ['7443', ' 5671 ', '', '  ', '0']) assert.doesNotThrow(() => loadConsoleConfig({ ...valid, NIMBUS_EMULATOR_TLS_PORT: good }), good);
    for (const bad of ['tls', '65536', '1.5', '-1'])
      assert.throws(
        () => loadConsoleConfig({ ...valid, NIMBUS_EMULATOR_TLS_PORT: bad }),
        (e: unknown) => e instanceof ConfigError && /NIMBUS_EMULATOR_TLS_PORT: .*port number/.test(e.message),
        bad,
      );
  });
});
