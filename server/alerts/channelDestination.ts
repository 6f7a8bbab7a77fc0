// Where an alert channel sends its notices, and what an edit changes about it. A stored secret is set for one
// destination - a webhook's Authorization header for one server, an SMTP password for one account on one server - so
// an edit that moves the channel elsewhere must not carry it there: the secret is given again, or the edit is refused
// with a 400 that says so (alertStore.ts). An SMTP password is also set for the protection it travels under: an edit
// that weakens the channel's TLS is refused the same way. The same comparison is what the audit records of an edit
// (routes.ts), the non-secret settings with their old and new values, the URL only as "its server changed".
import type { ChannelDoc, ChannelInput } from './model.ts';

/** The e-mail settings that name the account the password logs in to: a new one needs the password again. */
const EMAIL_ACCOUNT = ['host', 'port', 'username'] as const;

/**
 * Whether an e-mail edit weakens the transport the password travels under. `secure` has two modes: true is TLS from
 * the first byte (the login is always inside TLS); false is STARTTLS - required to any host but loopback
 * (channels.ts smtpTransportOptions), and to a loopback host plain when the server offers no STARTTLS. So true →
 * false is a weakening: the password is asked for again, as for another account, since its owner gave it for a
 * TLS-from-the-start connection. false → true only strengthens it (the same server, now TLS from the start) and
 * keeps the password. A channel stored without the field was sent as false (the schema's default).
 */
function tlsWeakened(existing: ChannelDoc, input: ChannelInput): boolean {
  return input.type === 'email' && existing.settings.secure === true && !input.secure;
}

export interface ChannelChanges {
  /** Non-secret settings (e-mail) whose value the edit changes: the stored value and the new one. */
  settingsChanged: Record<string, { from: unknown; to: unknown }>;
  /**
   * The URL's origin (scheme, host, port) changes: the notices go to another server. Whole-URL changes within one
   * origin (a new path or token on the same service) are the same receiver, and its headers still belong to it.
   */
  urlOriginChanged: boolean;
}

/** The origin of a URL; an unreadable one (not possible for a validated URL) counts as a server of its own. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return `unparsed:${url}`;
  }
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * What `input` changes about the stored channel. `storedUrl` unseals the stored URL; it is called only when the
 * input gives a URL and one is stored (the key is needed then anyway, to seal the new one).
 */
export function channelChanges(existing: ChannelDoc, input: ChannelInput, storedUrl: () => string | undefined): ChannelChanges {
  const settingsChanged: ChannelChanges['settingsChanged'] = {};
  if (input.type === 'email') {
    const { password: _p, type: _t, name: _n, ...next } = input;
    const keys = new Set([...Object.keys(existing.settings), ...Object.keys(next)]);
    for (const k of keys) {
      const before = existing.settings[k];
      const after = (next as Record<string, unknown>)[k];
      if (!same(before, after)) settingsChanged[k] = { from: before ?? null, to: after ?? null };
    }
  }
  let urlOriginChanged = false;
  if (input.type !== 'email' && input.url !== undefined && existing.secrets.url !== undefined) {
    const before = storedUrl();
    urlOriginChanged = before === undefined || originOf(before) !== originOf(input.url);
  }
  return { settingsChanged, urlOriginChanged };
}

/**
 * The stored secrets `input` may not keep because it moves the channel: a webhook's headers when the URL's origin
 * changes, the SMTP password when the host, port or user name does, or when TLS is weakened (tlsWeakened). A secret
 * the input gives again is its own. Returns the 400's message, or null when nothing stored goes somewhere new.
 */
export function secretLeftForOldDestination(existing: ChannelDoc, input: ChannelInput, changes: ChannelChanges): string | null {
  if (input.type === 'webhook' && changes.urlOriginChanged && input.headers === undefined && existing.secrets.headers !== undefined)
    return "the webhook's URL now names another server (scheme, host or port): give its extra headers again, or {} for none - the stored ones were set for the old server and are not sent to a new one";
  // Without a user name nothing logs in: the store drops the password rather than refuse the edit.
  if (input.type === 'email' && input.username && input.password === undefined && existing.secrets.password !== undefined) {
    const moved = EMAIL_ACCOUNT.filter((k) => k in changes.settingsChanged);
    const account = moved.length > 0 ? `the SMTP ${moved.join(', ')} changed` : undefined;
    const tls = tlsWeakened(existing, input) ? 'the SMTP TLS setting (secure) changed from TLS from the start to STARTTLS when offered' : undefined;
    // Both at once are named both: the password given again goes to the new account and over the weaker connection,
    // and whoever gives it should know both before typing it.
    if (account && tls)
      return `${account} and ${tls}: give the password again - the stored one was set for the old account over a connection that is always encrypted, and is sent neither to a new one nor over one that may not be`;
    if (account) return `${account}: give the password again - the stored one was set for the old account and is not sent to a new one`;
    if (tls) return `${tls}: give the password again - the stored one was set for a connection that is always encrypted and is not sent over one that may not be`;
  }
  return null;
}
