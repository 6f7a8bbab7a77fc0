// The default permanent classifier against what a downstream outage actually throws in Node: network failures are
// transient (Retry), programming errors stay permanent (DeadLetter). Table-driven: one row per error shape.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultPermanentFailureClassifier } from './dispositions.ts';
import { isNetworkError } from './networkErrors.ts';

/** An error carrying a Node-style `code` (what net, dns and undici throw). */
function coded(message: string, code: string, Base: ErrorConstructor = Error): Error {
  return Object.assign(new Base(message), { code });
}

/** Node's fetch: `TypeError: fetch failed` with the socket or DNS error as its cause. */
function fetchFailed(cause?: unknown): TypeError {
  return new TypeError('fetch failed', cause === undefined ? undefined : { cause });
}

class PartnerUnavailableError extends Error {
  override name = 'PartnerUnavailableError';
}

const rows: Array<{ what: string; error: unknown; expected: 'Retry' | 'DeadLetter' }> = [
  // Network failures: the downstream system is unreachable, not the message malformed.
  { what: 'fetch failed without a cause', error: fetchFailed(), expected: 'Retry' },
  {
    what: 'fetch failed, ECONNREFUSED',
    error: fetchFailed(coded('connect ECONNREFUSED', 'ECONNREFUSED')),
    expected: 'Retry',
  },
  {
    what: 'fetch failed, ECONNRESET',
    error: fetchFailed(coded('read ECONNRESET', 'ECONNRESET')),
    expected: 'Retry',
  },
  {
    what: 'fetch failed, ETIMEDOUT',
    error: fetchFailed(coded('connect ETIMEDOUT', 'ETIMEDOUT')),
    expected: 'Retry',
  },
  {
    what: 'fetch failed, EAI_AGAIN (DNS)',
    error: fetchFailed(coded('getaddrinfo EAI_AGAIN', 'EAI_AGAIN')),
    expected: 'Retry',
  },
  {
    what: 'fetch failed, ENOTFOUND (DNS)',
    error: fetchFailed(coded('getaddrinfo ENOTFOUND', 'ENOTFOUND')),
    expected: 'Retry',
  },
  {
    what: 'fetch failed, undici connect timeout',
    error: fetchFailed(coded('Connect Timeout Error', 'UND_ERR_CONNECT_TIMEOUT')),
    expected: 'Retry',
  },
  {
    what: 'fetch failed, undici socket error',
    error: fetchFailed(coded('other side closed', 'UND_ERR_SOCKET')),
    expected: 'Retry',
  },
  {
    what: 'undici headers timeout',
    error: coded('Headers Timeout Error', 'UND_ERR_HEADERS_TIMEOUT'),
    expected: 'Retry',
  },
  {
    what: 'undici body timeout',
    error: coded('Body Timeout Error', 'UND_ERR_BODY_TIMEOUT'),
    expected: 'Retry',
  },
  { what: 'a bare ECONNRESET from net', error: coded('socket hang up', 'ECONNRESET'), expected: 'Retry' },
  { what: 'EPIPE', error: coded('write EPIPE', 'EPIPE'), expected: 'Retry' },
  { what: 'EHOSTUNREACH', error: coded('connect EHOSTUNREACH', 'EHOSTUNREACH'), expected: 'Retry' },
  { what: 'ENETUNREACH', error: coded('connect ENETUNREACH', 'ENETUNREACH'), expected: 'Retry' },
  {
    what: 'a TypeError whose own code is ECONNRESET',
    error: coded('terminated', 'ECONNRESET', TypeError),
    expected: 'Retry',
  },
  {
    what: 'an adapter wrapping a network failure in a TypeError',
    error: new TypeError('partner call failed', { cause: coded('read ECONNRESET', 'ECONNRESET') }),
    expected: 'Retry',
  },
  {
    what: 'an AggregateError of connection refusals (happy eyeballs)',
    error: fetchFailed(
      new AggregateError([coded('connect ECONNREFUSED ::1', 'ECONNREFUSED')], 'all attempts failed'),
    ),
    expected: 'Retry',
  },
  // Programming and data errors keep their permanent classification.
  {
    what: 'reading a property of undefined',
    error: new TypeError("Cannot read properties of undefined (reading 'id')"),
    expected: 'DeadLetter',
  },
  { what: 'an invalid date', error: new RangeError('Invalid time value'), expected: 'DeadLetter' },
  { what: 'JSON.parse', error: new SyntaxError('Unexpected token o in JSON'), expected: 'DeadLetter' },
  {
    what: 'a TypeError that only mentions a network word',
    error: new TypeError('ECONNRESET is not a function'),
    expected: 'DeadLetter',
  },
  {
    what: 'an invalid fetch argument (undici)',
    error: coded('invalid method', 'UND_ERR_INVALID_ARG', TypeError),
    expected: 'DeadLetter',
  },
  {
    what: 'fetch with an invalid URL',
    error: new TypeError('Failed to parse URL from not a url'),
    expected: 'DeadLetter',
  },
  {
    what: 'an ERR_INVALID_ARG_TYPE from Node',
    error: coded('The "path" argument must be of type string', 'ERR_INVALID_ARG_TYPE', TypeError),
    expected: 'DeadLetter',
  },
  // Ordinary errors stay retryable, network or not.
  {
    what: 'an adapter error type',
    error: new PartnerUnavailableError('partner answered 503'),
    expected: 'Retry',
  },
];

describe('default permanent classifier: network errors are transient', () => {
  const c = defaultPermanentFailureClassifier();
  for (const row of rows) {
    test(`${row.what} -> ${row.expected}`, () => {
      assert.equal(c.classify(row.error, 'OrderPlaced', 'billing'), row.expected);
    });
  }

  test('an explicitly listed permanent type still wins over a network cause', () => {
    class PartnerContractBroken extends Error {}
    const explicit = defaultPermanentFailureClassifier({ types: [PartnerContractBroken] });
    const error = new PartnerContractBroken('schema mismatch', {
      cause: coded('read ECONNRESET', 'ECONNRESET'),
    });
    assert.equal(explicit.classify(error, 'OrderPlaced', 'billing'), 'DeadLetter');
  });

  test('isNetworkError looks at the whole cause chain, never at arbitrary message text', () => {
    assert.equal(isNetworkError(new Error('outer', { cause: fetchFailed() })), true);
    assert.equal(isNetworkError(new Error('ETIMEDOUT talking to the partner')), false);
    assert.equal(isNetworkError(undefined), false);
    assert.equal(isNetworkError({ code: 'ECONNRESET' }), true, 'a plain object with a network code');
  });
});
