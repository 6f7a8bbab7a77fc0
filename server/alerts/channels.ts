// Sending a notice (an alert fired or recovered) through a channel: a generic webhook (the JSON body documented in
// docs/operations.md), a Microsoft Teams or Slack incoming webhook in their own formats, or e-mail over SMTP
// (nodemailer). Secrets are unsealed only here, just before the send, and never logged; errors name the channel,
// never its URL (an incoming-webhook URL is itself the credential).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import nodemailer from 'nodemailer';
import { addressProblem, isPlatformName, LINK_LOCAL_REFUSAL, urlTargetProblem } from './channelTarget.ts';
import { alertsKey, SecretKeyError, unseal } from './secrets.ts';
import { isAllowedChannelUrl, type AlertDoc, type ChannelDoc } from './model.ts';
import { isLoopbackName } from '../../lib/net/loopback.ts';

export type NoticeKind = 'fired' | 'recovered' | 'test';

/** The generic webhook body (version 1). */
export interface AlertNotice {
  kind: 'nimbus.alert';
  version: 1;
  notice: NoticeKind;
  alertId: string;
  rule: { id: string; name: string; type: string; endpointId: string | null };
  summary: string;
  value: number;
  threshold: number | null;
  firedAt: string;
  recoveredAt: string | null;
  /** Absolute link to the console page that shows the problem. */
  link: string;
}

export function noticeOf(alert: AlertDoc, notice: NoticeKind, consoleUrl: string): AlertNotice {
  return {
    kind: 'nimbus.alert',
    version: 1,
    notice,
    alertId: alert.id,
    rule: { id: alert.ruleId, name: alert.ruleName, type: alert.ruleType, endpointId: alert.endpointId },
    summary: alert.summary,
    value: alert.value,
    threshold: alert.threshold,
    firedAt: alert.firedAt,
    recoveredAt: alert.recoveredAt,
    link: new URL(alert.link, consoleUrl.endsWith('/') ? consoleUrl : `${consoleUrl}/`).toString(),
  };
}

function title(n: AlertNotice): string {
  const state = n.notice === 'fired' ? 'FIRING' : n.notice === 'recovered' ? 'RECOVERED' : 'TEST';
  return `[NimBus] ${state}: ${n.rule.name}`;
}

/**
 * Microsoft Teams (Workflows "post to a channel when a webhook request is received", or a classic connector): an
 * Adaptive Card in the envelope Teams documents for incoming webhooks ("Send Adaptive Cards using an incoming
 * webhook": `type` "message", one attachment with the adaptive-card content type, `contentUrl` null, the card as
 * `content`). Card version 1.2 as in that example; everything used here (TextBlock, FactSet, Action.OpenUrl) is 1.0.
 */
export function teamsBody(n: AlertNotice): unknown {
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.2',
          body: [
            { type: 'TextBlock', size: 'Medium', weight: 'Bolder', text: title(n), wrap: true, color: n.notice === 'fired' ? 'Attention' : 'Good' },
            { type: 'TextBlock', text: n.summary, wrap: true },
            {
              type: 'FactSet',
              facts: [
                { title: 'Rule', value: `${n.rule.name} (${n.rule.type})` },
                ...(n.rule.endpointId ? [{ title: 'Endpoint', value: n.rule.endpointId }] : []),
                { title: 'Fired', value: n.firedAt },
                ...(n.recoveredAt ? [{ title: 'Recovered', value: n.recoveredAt }] : []),
              ],
            },
          ],
          actions: [{ type: 'Action.OpenUrl', title: 'Open in the console', url: n.link }],
        },
      },
    ],
  };
}

/**
 * Slack's control characters in message text: `&`, `<` and `>` must be sent as entities (Slack's "formatting text"
 * guide), or a summary quoting an exception such as `<!channel>` would become markup, even a mention.
 */
export function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * Slack incoming webhook: `text` (the notification's fallback) and `blocks` (a section with the title and summary,
 * a context line with the times and the link as `<url|label>`), as Slack documents for incoming webhooks.
 */
export function slackBody(n: AlertNotice): unknown {
  const t = slackEscape(title(n));
  const summary = slackEscape(n.summary);
  return {
    text: `${t}: ${summary}`,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: `*${t}*\n${summary}` } },
      {
        type: 'context',
        elements: [{ type: 'mrkdwn', text: `fired ${n.firedAt}${n.recoveredAt ? `, recovered ${n.recoveredAt}` : ''} · <${slackEscape(n.link)}|open in the console>` }],
      },
    ],
  };
}

export function emailText(n: AlertNotice): { subject: string; text: string } {
  const lines = [
    n.summary,
    '',
    `Rule: ${n.rule.name} (${n.rule.type})${n.rule.endpointId ? ` on ${n.rule.endpointId}` : ''}`,
    `Fired: ${n.firedAt}`,
    ...(n.recoveredAt ? [`Recovered: ${n.recoveredAt}`] : []),
    '',
    `Open in the console: ${n.link}`,
  ];
  return { subject: title(n), text: lines.join('\n') };
}

/** An e-mail channel's stored settings (model.ts channelInputSchema, without the password). */
export type EmailSettings = { host: string; port: number; secure: boolean; username?: string; from: string; to: string[] };

/**
 * The SMTP transport of an e-mail channel. To a host other than this machine the session must be encrypted - TLS
 * from the first byte (`secure`, port 465) or STARTTLS, required (`requireTLS`): nodemailer's default upgrades only
 * when the server offers STARTTLS, so a server without it, or anyone on the path who strips the offer, got the
 * notice and AUTH PLAIN (the password in base64) in clear. The webhook rule (https, plain http only to loopback)
 * for SMTP. To loopback (a local relay) plain stays allowed, and STARTTLS is still used when offered.
 */
export function smtpTransportOptions(s: EmailSettings, password: string | undefined, timeoutMs: number) {
  const loopback = isLoopbackName(s.host.trim().replace(/^\[|\]$/g, ''));
  return {
    host: s.host,
    port: s.port,
    secure: s.secure,
    requireTLS: !s.secure && !loopback,
    ...(s.username ? { auth: { user: s.username, pass: password ?? '' } } : {}),
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  };
}

/** A failure whose message names no target and so is shown as it is (not reduced to its kind like fetch's). */
class RefusedSend extends Error {}

/**
 * The DNS lookup of a notice's connection, refusing addresses the channel may never reach (channelTarget.ts): the
 * check is on the addresses this very connection uses, so a name that resolved to a public address when the channel
 * was saved, and to 127.0.0.1 or 169.254.169.254 now, is refused - there is no second lookup to race.
 */
/** How names are resolved for a notice: node's `dns.lookup` (the system resolver), or a test's stand-in. */
export type Resolve = (hostname: string, options: { all: true }, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

function guardedLookup(port: number, env: Record<string, string | undefined> | undefined, resolve: Resolve = dnsLookup): NonNullable<RequestOptions['lookup']> {
  return ((hostname: string, options: object, callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void) => {
    // A platform name (GCP's metadata server) is refused before it is resolved: it names nothing else.
    if (isPlatformName(hostname)) return callback(new RefusedSend(`the target names ${LINK_LOCAL_REFUSAL.replace(/ is never an alert target$/, '')}: refused, nothing was sent`), []);
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      for (const a of addresses) {
        const problem = addressProblem(a.address, port, env);
        if (problem !== null) return callback(new RefusedSend(`the target resolves to ${problem.replace(/ is never an alert target$/, '')}: refused, nothing was sent`), []);
      }
      const all = (options as { all?: boolean }).all === true;
      return all ? callback(null, addresses) : callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  }) as NonNullable<RequestOptions['lookup']>;
}

/** The address a host name resolves to for a connection, refused (RefusedSend) when it may never be reached. */
async function checkedAddress(host: string, port: number, env: Record<string, string | undefined>, resolveName?: Resolve): Promise<string> {
  const { address } = await new Promise<LookupAddress>((resolve, reject) =>
    guardedLookup(port, env, resolveName)(host.trim().replace(/^\[|\]$/g, ''), {}, (err, address, family) =>
      err ? reject(err) : resolve({ address: address as string, family: family ?? 4 }),
    ),
  );
  return address;
}

async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  timeoutMs: number,
  env?: Record<string, string | undefined>,
  resolveName?: Resolve,
): Promise<void> {
  // A URL stored before https was required keeps no exception: its notice and headers would cross a network in clear.
  // The reason only as far as it is true: a stored value that is not a URL, or not http at all, is no "plain http".
  if (!isAllowedChannelUrl(url))
    throw new RefusedSend(`the stored URL ${URL.canParse(url) && new URL(url).protocol === 'http:' ? 'is plain http to a host other than this machine' : 'is not an https URL'}: enter it again as https`);
  // A literal address is connected to without a lookup: checked here (the lookup checks names).
  const literal = urlTargetProblem(url, env);
  if (literal !== null) throw new RefusedSend(`the URL names ${literal.replace(/ is never an alert target$/, '')}: refused, nothing was sent`);
  const target = new URL(url);
  const port = target.port !== '' ? Number(target.port) : target.protocol === 'https:' ? 443 : 80;
  const payload = Buffer.from(JSON.stringify(body));
  const signal = AbortSignal.timeout(timeoutMs);
  // node:http rather than fetch: only it takes a lookup of our own (guardedLookup), so the addresses checked are the
  // ones connected to. A redirect is not followed (as fetch's `redirect: 'error'`): it answers 3xx, a failure.
  const status = await new Promise<number>((resolve, reject) => {
    const req = (target.protocol === 'https:' ? httpsRequest : httpRequest)(
      target,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(payload.length), ...headers },
        lookup: guardedLookup(port, env, resolveName),
        signal,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', (err) => reject(signal.aborted ? Object.assign(new Error('timed out'), { name: 'TimeoutError' }) : err));
    req.end(payload);
  });
  if (status < 200 || status > 299) throw new Error(`the receiver answered ${status}`);
}

export interface SendOptions {
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
  /** Tests only: the resolver the target's name goes through (default `dns.lookup`), so that a test can make a name resolve to a platform address. */
  resolve?: Resolve;
}

/** Sends one notice; rejects with a message that is safe to store and show (no URL, no password). */
export async function sendNotice(channel: ChannelDoc, notice: AlertNotice, options: SendOptions = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  // Which ports are the console's own: the process's settings, with what the caller passed on top.
  const targetEnv = { ...process.env, ...options.env };
  const key = Object.keys(channel.secrets).length > 0 ? alertsKey(options.env) : undefined;
  const secret = (k: string) => (channel.secrets[k] !== undefined && key ? unseal(channel.secrets[k], key) : undefined);
  try {
    switch (channel.type) {
      case 'webhook': {
        const headers = secret('headers');
        await postJson(secret('url')!, notice, headers ? (JSON.parse(headers) as Record<string, string>) : {}, timeoutMs, targetEnv, options.resolve);
        return;
      }
      case 'teams':
        await postJson(secret('url')!, teamsBody(notice), {}, timeoutMs, targetEnv, options.resolve);
        return;
      case 'slack':
        await postJson(secret('url')!, slackBody(notice), {}, timeoutMs, targetEnv, options.resolve);
        return;
      case 'email': {
        const s = channel.settings as EmailSettings;
        // Resolved and checked here, then connected to by that address (its TLS still verified for the name given):
        // nodemailer resolves names itself and takes no lookup of ours.
        const address = await checkedAddress(s.host, s.port, targetEnv, options.resolve);
        const name = s.host.trim().replace(/^\[|\]$/g, '');
        const transport = nodemailer.createTransport({
          ...smtpTransportOptions(s, secret('password'), timeoutMs),
          host: address,
          ...(isIP(name) === 0 ? { tls: { servername: name } } : {}),
        });
        try {
          const { subject, text } = emailText(notice);
          await transport.sendMail({ from: s.from, to: s.to, subject, text });
        } finally {
          transport.close();
        }
        return;
      }
    }
  } catch (err) {
    // Fetch and SMTP errors may quote the target; keep the kind of failure only. A secret that cannot be read (key
    // changed, value damaged) says so in words that never quote it.
    const e = err as { name?: string; code?: string; message?: string };
    const reason =
      err instanceof RefusedSend || err instanceof SecretKeyError ? err.message
      : e.name === 'TimeoutError' ? 'timed out'
      : e.message?.startsWith('the receiver answered') ? e.message
      // requireTLS: the server offered no STARTTLS or the upgrade failed. Nothing was sent, the password included.
      : channel.type === 'email' && e.code === 'ETLS' ? 'no TLS with the SMTP server (it offered no STARTTLS, or the upgrade failed); mail to a host other than this machine goes only encrypted, so nothing was sent'
      : (e.code ?? e.name ?? 'failed');
    throw new Error(`channel '${channel.name}' (${channel.type}): ${reason}`);
  }
}
