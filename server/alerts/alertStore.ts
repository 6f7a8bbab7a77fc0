// Rules, channels, evaluation state and alert history in the `alerts` container (partitioned on /kind). The state
// documents are replaced under their etag: the transition (fire, recover) belongs to whoever wrote it, which is
// what keeps two evaluators from sending the same notice twice even in the moment a lease changes hands.
import { randomUUID } from 'node:crypto';
import type { Container, Database } from '@azure/cosmos';
import { openContainer, type ContainerSlot } from '../../lib/store/containers.ts';
import { cosmosStatus } from '../../lib/store/index.ts';
import { badRequest, notFound } from '../http.ts';
import { alertsKey, seal, SecretKeyError, unseal } from './secrets.ts';
import { auditorName, type Auditor } from '../manager/commands.ts';
import { channelChanges, secretLeftForOldDestination, type ChannelChanges } from './channelDestination.ts';
import { hostProblem, urlTargetProblem } from './channelTarget.ts';
import { isAllowedChannelUrl, type AlertClosedBy, type AlertDoc, type ChannelDoc, type ChannelInput, type RuleDoc, type RuleInput, type RuleStateDoc } from './model.ts';

export const ALERTS_CONTAINER = 'alerts';

/** Who changed a rule or channel: the display name and, when known, the stable id beside it (two people share a name). */
const updatedByOf = (user: Auditor): { updatedBy: string; updatedById?: string } =>
  typeof user === 'string' ? { updatedBy: user } : { updatedBy: auditorName(user), updatedById: user.id };

/** The list's reason for a stored URL every send refuses as not https (plain http to another host, or no URL at all). */
export const INSECURE_URL = 'Its stored URL is neither https nor plain http to this machine: this channel will not send until its URL is entered again as https.';

export class AlertStore {
  readonly #slot: ContainerSlot = {};
  readonly #database: Database;
  readonly #env: Record<string, string | undefined>;

  constructor(database: Database, env: Record<string, string | undefined> = process.env) {
    this.#database = database;
    this.#env = env;
  }

  container(): Promise<Container> {
    return openContainer(this.#slot, this.#database, ALERTS_CONTAINER, '/kind');
  }

  async #all<T>(kind: string): Promise<T[]> {
    const c = await this.container();
    const r = await c.items.query<T>({ query: 'SELECT * FROM c WHERE c.kind = @k', parameters: [{ name: '@k', value: kind }] }, { partitionKey: kind }).fetchAll();
    return r.resources;
  }

  async #get<T>(kind: string, id: string): Promise<(T & { _etag?: string }) | null> {
    const c = await this.container();
    try {
      const r = await c.item(id, kind).read<T & { _etag?: string }>();
      return r.resource ?? null;
    } catch (err) {
      if (cosmosStatus(err) === 404) return null;
      throw err;
    }
  }

  async #delete(kind: string, id: string): Promise<boolean> {
    const c = await this.container();
    try {
      await c.item(id, kind).delete();
      return true;
    } catch (err) {
      if (cosmosStatus(err) === 404) return false;
      throw err;
    }
  }

  // ------------------------------------------------------------------------------------------------ rules

  listRules(): Promise<RuleDoc[]> {
    return this.#all<RuleDoc>('rule').then((r) => r.sort((a, b) => a.name.localeCompare(b.name)));
  }

  getRule(id: string): Promise<RuleDoc | null> {
    return this.#get<RuleDoc>('rule', id);
  }

  async saveRule(input: RuleInput, user: Auditor, id?: string, now = new Date()): Promise<RuleDoc> {
    const existing = id ? await this.getRule(id) : null;
    if (id && !existing) throw notFound(`no alert rule ${id}`);
    const doc: RuleDoc = {
      ...input,
      id: id ?? randomUUID(),
      kind: 'rule',
      createdAt: existing?.createdAt ?? now.toISOString(),
      updatedAt: now.toISOString(),
      ...updatedByOf(user),
    };
    const c = await this.container();
    await c.items.upsert(doc);
    // A disabled rule is not evaluated, so nothing else would ever close its alert or clear its firing state.
    if (!doc.enabled) await this.closeFiring(doc.id, 'ruleDisabled', now);
    return doc;
  }

  async deleteRule(id: string, now = new Date()): Promise<void> {
    if (!(await this.#delete('rule', id))) throw notFound(`no alert rule ${id}`);
    await this.closeFiring(id, 'ruleDeleted', now);
  }

  /**
   * A rule disabled or deleted while firing: its state is removed (so a rule enabled again starts fresh - no
   * firing left over that would keep its next incident from sending "fired", no cool-down from the old fire) and
   * its open alert closed (recoveredAt = now, closedBy = why). No "recovered" notice is sent: the condition did not
   * recover, the operator acted, and the console's audit records that. A deleted rule's state goes whether firing
   * or not; a disabled rule's only when firing (its cool-down and memory are kept otherwise). The state is removed
   * If-Match the etag read, like the evaluator's transitions, so of this and a concurrent evaluation one wins (the
   * evaluator's write then finds no state and does nothing, or this re-reads). True when a firing state was closed.
   */
  async closeFiring(ruleId: string, reason: AlertClosedBy, now = new Date()): Promise<boolean> {
    const c = await this.container();
    for (let attempt = 0; attempt < 10; attempt++) {
      const { state, etag } = await this.getState(ruleId);
      if (!state || etag === undefined) return false;
      if (!state.firing && reason === 'ruleDisabled') return false;
      try {
        await c.item(ruleId, 'state').delete({ accessCondition: { type: 'IfMatch', condition: etag } });
      } catch (err) {
        const s = cosmosStatus(err);
        if (s === 404) return false;
        if (s === 412) continue; // an evaluation wrote meanwhile: judge its state
        throw err;
      }
      if (state.firing && state.alertId) await this.closeAlert(state.alertId, reason, now);
      return state.firing;
    }
    throw new Error(`the state of alert rule ${ruleId} kept changing; try again`);
  }

  /**
   * Closes one open alert as `reason` (If-Match the etag read, so a concurrent write of its deliveries is not lost);
   * an alert already closed, or not (yet) stored, is left alone. True when this call closed it.
   */
  async closeAlert(alertId: string, reason: AlertClosedBy, now = new Date()): Promise<boolean> {
    const c = await this.container();
    for (let attempt = 0; attempt < 10; attempt++) {
      const stored = await this.#get<AlertDoc>('alert', alertId);
      if (!stored || stored.recoveredAt !== null || stored._etag === undefined) return false;
      const { _etag: etag, ...alert } = stored;
      try {
        await c.item(alertId, 'alert').replace({ ...alert, recoveredAt: now.toISOString(), closedBy: reason }, { accessCondition: { type: 'IfMatch', condition: etag } });
        return true;
      } catch (err) {
        const s = cosmosStatus(err);
        if (s === 404) return false;
        if (s !== 412) throw err;
      }
    }
    throw new Error(`alert ${alertId} kept changing; try again`);
  }

  // --------------------------------------------------------------------------------------------- channels

  listChannels(): Promise<ChannelDoc[]> {
    return this.#all<ChannelDoc>('channel').then((r) => r.sort((a, b) => a.name.localeCompare(b.name)));
  }

  getChannel(id: string): Promise<ChannelDoc | null> {
    return this.#get<ChannelDoc>('channel', id);
  }

  /** What `input` would change about the stored channel `id` (its audit entry); null when there is no such channel. */
  async channelChanges(id: string, input: ChannelInput): Promise<ChannelChanges | null> {
    const existing = await this.getChannel(id);
    return existing && existing.type === input.type ? channelChanges(existing, input, () => this.#storedUrl(existing)) : null;
  }

  /**
   * The stored URL, or undefined when there is none or it no longer decrypts (NIMBUS_ALERTS_KEY was changed): an
   * unreadable URL counts as another server, so the URL the edit gives is taken and the headers, sealed under the
   * old key too, must be given with it - the re-entry docs/operations.md asks for after a key change. A missing or
   * malformed key still throws: the edit could not seal the new URL either.
   */
  #storedUrl(d: ChannelDoc): string | undefined {
    if (d.secrets.url === undefined) return undefined;
    const key = alertsKey(this.#env);
    try {
      return unseal(d.secrets.url, key);
    } catch (err) {
      if (err instanceof SecretKeyError) return undefined;
      throw err;
    }
  }

  /**
   * Why each send of the channel is refused for its stored target, in words the console shows, or null: a URL that
   * is plain http to a non-loopback host (channels.ts checks isAllowedChannelUrl before every post), or a URL or SMTP
   * host that names a target never allowed (channelTarget.ts: an own server's port, a platform address) - stored
   * before that rule, or an own server's port only now (its port given to Cosmos, the emulator or the console since).
   * Null when that cannot be told - no URL, no key that opens it, a stored value that is damaged, any other failure
   * to read it: a list of channels, which every role reads, must not fail for one channel, and the send (and "send
   * test") reports why it cannot read the URL itself. Only the reason comes out, never the URL.
   */
  refusedAtSend(d: ChannelDoc): string | null {
    const target = (problem: string | null, what: string) =>
      problem === null ? null : `Its ${what} names ${problem.replace(/ is never an alert target$/, '')}: this channel will not send until it is changed.`;
    if (d.type === 'email') {
      const { host, port } = d.settings;
      return typeof host === 'string' && typeof port === 'number' ? target(hostProblem(host, port, this.#env), 'SMTP server') : null;
    }
    if (d.secrets.url === undefined) return null;
    try {
      const url = this.#storedUrl(d);
      if (url === undefined) return null;
      if (!isAllowedChannelUrl(url)) return INSECURE_URL;
      return target(urlTargetProblem(url, this.#env), 'stored URL');
    } catch {
      return null;
    }
  }

  /**
   * Stores a channel with its secrets sealed. On update a secret the input leaves out keeps its stored value - but
   * not to another destination: a webhook's headers when its URL names another server, the SMTP password when the
   * host, port or user name changes, must then be given again (400 otherwise; channelDestination.ts). An empty
   * value removes a secret. A new channel must give every secret its type needs (the URL of a webhook, Teams or
   * Slack channel).
   */
  async saveChannel(input: ChannelInput, user: Auditor, id?: string, now = new Date()): Promise<ChannelDoc> {
    const existing = id ? await this.getChannel(id) : null;
    if (id && !existing) throw notFound(`no alert channel ${id}`);
    if (existing && existing.type !== input.type) throw badRequest(`a channel's type cannot change (it is ${existing.type})`);
    const secrets: Record<string, string> = { ...(existing?.secrets ?? {}) };
    if (existing) {
      // No user name, no login: a stored password would only wait there for the next account to be sent to.
      if (input.type === 'email' && !input.username && input.password === undefined) delete secrets.password;
      const refused = secretLeftForOldDestination(existing, input, channelChanges(existing, input, () => this.#storedUrl(existing)));
      if (refused !== null) throw badRequest(refused);
    }
    const plain: Record<string, string> = {};
    const settings: Record<string, unknown> = {};
    if (input.type === 'email') {
      const { password, type: _t, name: _n, ...rest } = input;
      Object.assign(settings, rest);
      if (password !== undefined) plain.password = password;
    } else {
      if (input.url !== undefined) plain.url = input.url;
      // `{}` is "no extra headers": stored as none rather than as a sealed empty object.
      if (input.type === 'webhook' && input.headers !== undefined) plain.headers = Object.keys(input.headers).length > 0 ? JSON.stringify(input.headers) : '';
    }
    if (Object.keys(plain).length > 0) {
      const key = alertsKey(this.#env);
      for (const [k, v] of Object.entries(plain)) {
        if (v === '') delete secrets[k];
        else secrets[k] = seal(v, key);
      }
    }
    if (input.type !== 'email' && secrets.url === undefined)
      throw badRequest(`a ${input.type} channel needs its url`);
    const doc: ChannelDoc = {
      id: id ?? randomUUID(),
      kind: 'channel',
      type: input.type,
      name: input.name,
      settings,
      secrets,
      createdAt: existing?.createdAt ?? now.toISOString(),
      updatedAt: now.toISOString(),
      ...updatedByOf(user),
    };
    const c = await this.container();
    await c.items.upsert(doc);
    return doc;
  }

  async deleteChannel(id: string): Promise<void> {
    if (!(await this.#delete('channel', id))) throw notFound(`no alert channel ${id}`);
  }

  // -------------------------------------------------------------------------------------- state & history

  async getState(ruleId: string): Promise<{ state: RuleStateDoc | null; etag: string | undefined }> {
    const d = await this.#get<RuleStateDoc>('state', ruleId);
    return { state: d, etag: d?._etag };
  }

  /** Writes the state if nobody else changed it since `etag` (undefined: it must not exist yet). False when lost. */
  async casState(next: RuleStateDoc, etag: string | undefined): Promise<boolean> {
    const c = await this.container();
    try {
      if (etag === undefined) await c.items.create(next);
      else await c.item(next.id, 'state').replace(next, { accessCondition: { type: 'IfMatch', condition: etag } });
      return true;
    } catch (err) {
      const s = cosmosStatus(err);
      if (s === 409 || s === 412 || s === 404) return false;
      throw err;
    }
  }

  async putAlert(a: AlertDoc): Promise<void> {
    const c = await this.container();
    await c.items.upsert(a);
  }

  getAlert(id: string): Promise<AlertDoc | null> {
    return this.#get<AlertDoc>('alert', id);
  }

  /**
   * The history, newest first (at most `limit`). `endpointIds`: only the alerts of site-wide rules and of rules on
   * these endpoints (a per-endpoint caller's read scope), filtered in the query so that `limit` counts what the
   * caller gets and "Show more" knows when the history has no more.
   */
  async listAlerts(limit = 200, endpointIds?: string[]): Promise<AlertDoc[]> {
    const c = await this.container();
    const scoped = endpointIds === undefined ? '' : ' AND (IS_NULL(c.endpointId) OR ARRAY_CONTAINS(@eps, c.endpointId))';
    const r = await c.items
      .query<AlertDoc>(
        {
          query: `SELECT TOP ${Math.max(1, Math.min(1000, limit))} * FROM c WHERE c.kind = 'alert'${scoped} ORDER BY c.firedAt DESC`,
          parameters: endpointIds === undefined ? [] : [{ name: '@eps', value: endpointIds }],
        },
        { partitionKey: 'alert' },
      )
      .fetchAll();
    return r.resources;
  }
}
