// The ATOM admin plane: the HTTP side of the emulator that ServiceBusAdministrationClient talks to. It turns
// requests into BrokerAdmin calls and broker answers (or BrokerErrors) into the XML and status codes the
// client expects. It keeps no state of its own beyond what the access control holds: every request must carry
// an `Authorization: SharedAccessSignature …` header giving Manage on the path (401 otherwise, as on Azure);
// topics and queues carry their AuthorizationRules, and /$Resources/AuthorizationRules manages namespace policies
// (JSON).

import type { IncomingMessage, ServerResponse } from 'node:http';
import { BrokerError, type BrokerAdmin, type BrokerErrorCode } from '../broker/api.ts';
import {
  AtomFormatError,
  readAuthorizationRules,
  readEntry,
  readRuleDescription,
  readSubscriptionDescription,
  readTopicDescription,
  readQueueDescription,
} from './atom-read.ts';
import {
  errorDocument,
  feed,
  namespaceEntry,
  ruleEntry,
  subscriptionEntry,
  topicEntry,
  queueEntry,
  xmlDocument,
  type AtomContext,
} from './atom-write.ts';
import { matchRoute, RouteError, type AdminRoute } from './routes.ts';
import { z } from 'zod';
import { AccessDenied, type AccessControl } from '../auth/access.ts';
import { PolicyError, policyInputSchema, toPolicy, type AccessPolicy } from '../auth/policies.ts';
import type { XmlFragment } from './xml-writer.ts';

export interface AdminHandlerOptions {
  /** Largest accepted request body; larger ones get 413. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Page size when the client sends no $top, and the largest page served. Default 100 (as on Azure). */
  maxPageSize?: number;
  /** Clock for feed timestamps. */
  now?: () => number;
  /** Name reported by getNamespaceProperties(). Default "emulator". */
  namespaceName?: string;
  /** SAS checks on every request; absent = none (unit tests of the ATOM mapping only). */
  access?: AccessControl;
  /** pino-compatible logger; receives methods, paths and error messages only (never headers or bodies). */
  log?: {
    warn(obj: object, msg?: string): void;
    error(obj: object, msg?: string): void;
    debug(obj: object, msg?: string): void;
  };
}

const ENTRY_TYPE = 'application/atom+xml;type=entry;charset=utf-8';
const FEED_TYPE = 'application/atom+xml;type=feed;charset=utf-8';
const ERROR_TYPE = 'application/xml;charset=utf-8';

/** An HTTP answer that is not a success. `status` follows what the admin client maps to its error codes. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

const STATUS_FOR_CODE: Partial<Record<BrokerErrorCode, number>> = {
  EntityNotFound: 404, // → MessageEntityNotFoundError
  EntityAlreadyExists: 409, // → MessageEntityAlreadyExistsError (on create)
  BadRequest: 400, // → ServiceError
  InvalidOperation: 400, // → ServiceError
  QuotaExceeded: 403, // → QuotaExceededError (403 without "SubCode=40301")
};

// The client signs requests with the namespace's host; nothing else about Host is trusted, but it is echoed in
// ids, links and ForwardTo, so only host[:port] shapes are used.
function hostOf(req: IncomingMessage): string {
  const host = req.headers.host;
  return typeof host === 'string' && /^[A-Za-z0-9.\-[\]:]{1,255}$/.test(host) ? host : 'localhost';
}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume(); // discard, so the connection can still carry the answer
      reject(new HttpError(413, `The request body is larger than ${limit} bytes.`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        chunks.length = 0;
        reject(new HttpError(413, `The request body is larger than ${limit} bytes.`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', (err) => {
      if (!failed) reject(err);
      failed = true;
    });
    // A client that disconnects mid-body must not leave the request pending forever.
    req.on('close', () => {
      if (!failed && !req.readableEnded) {
        failed = true;
        reject(new HttpError(400, 'The request body ended early.'));
      }
    });
  });
}

function pageParams(url: URL, maxPageSize: number): { skip: number; top: number } {
  const read = (name: string): number | undefined => {
    const raw = url.searchParams.get(name);
    if (raw === null) return undefined;
    if (!/^\d{1,9}$/.test(raw)) throw new HttpError(400, `${name} must be a non-negative whole number.`);
    return Number(raw);
  };
  const skip = read('$skip') ?? 0;
  const top = Math.min(read('$top') ?? maxPageSize, maxPageSize);
  // $top=0 would announce the same next page forever.
  return { skip, top: top === 0 ? maxPageSize : top };
}

function page<T>(items: T[], skip: number, top: number): { slice: T[]; nextSkip?: number } {
  const slice = items.slice(skip, skip + top);
  const end = skip + slice.length;
  return end < items.length ? { slice, nextSkip: end } : { slice };
}

export function createAdminHandler(
  broker: BrokerAdmin,
  options: AdminHandlerOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  const maxPageSize = options.maxPageSize ?? 100;
  const now = options.now ?? Date.now;
  const namespaceName = options.namespaceName ?? 'emulator';
  const startedAt = now();
  const log = options.log;
  const access = options.access;

  const policiesOf = (entity: string): AccessPolicy[] => access?.policies.policiesOf(entity) ?? [];

  /** The topic's or queue's AuthorizationRules from a PUT body, validated before anything changes; undefined = not given. */
  function requestedPolicies(body: Record<string, unknown>): AccessPolicy[] | undefined {
    const rules = readAuthorizationRules(body);
    if (rules === undefined) return undefined;
    if (!access && rules.length > 0)
      throw new HttpError(400, 'This admin plane has no access control to keep AuthorizationRules.');
    return rules.map((r) => {
      const parsed = policyInputSchema.safeParse(r);
      if (!parsed.success) {
        throw new HttpError(
          400,
          `Invalid AuthorizationRule '${r.keyName.slice(0, 60)}': ${parsed.error.issues.map((i) => i.message).join('; ')}`,
        );
      }
      return toPolicy(parsed.data);
    });
  }

  function policyJson(p: AccessPolicy): string {
    return JSON.stringify({
      keyName: p.keyName,
      rights: p.rights,
      primaryKey: p.primaryKey,
      secondaryKey: p.secondaryKey,
    });
  }

  function send(res: ServerResponse, status: number, contentType: string | undefined, body: string): void {
    if (res.headersSent) return;
    const headers: Record<string, string | number> = { 'content-length': Buffer.byteLength(body) };
    if (contentType) headers['content-type'] = contentType;
    res.writeHead(status, headers);
    res.end(body);
  }

  function sendError(res: ServerResponse, status: number, detail: string): void {
    send(res, status, ERROR_TYPE, errorDocument(status, detail));
  }

  function entity(res: ServerResponse, status: number, fragment: XmlFragment): void {
    send(res, status, ENTRY_TYPE, xmlDocument(fragment));
  }

  function topicFragment(ctx: AtomContext, name: string): XmlFragment {
    return topicEntry(ctx, broker.getTopic(name), broker.getTopicRuntime(name), policiesOf(name));
  }

  function queueFragment(ctx: AtomContext, name: string): XmlFragment {
    return queueEntry(ctx, broker.getQueue(name), broker.getQueueRuntime(name), policiesOf(name));
  }

  function subscriptionFragment(ctx: AtomContext, topic: string, sub: string): XmlFragment {
    return subscriptionEntry(
      ctx,
      broker.getSubscription(topic, sub),
      broker.getSubscriptionRuntime(topic, sub),
    );
  }

  function listFeed(
    res: ServerResponse,
    ctx: AtomContext,
    url: URL,
    title: string,
    path: string,
    build: (skip: number, top: number) => { entries: XmlFragment[]; nextSkip?: number },
  ): void {
    const { skip, top } = pageParams(url, maxPageSize);
    const { entries, nextSkip } = build(skip, top);
    send(
      res,
      200,
      FEED_TYPE,
      xmlDocument(
        feed(ctx, { title, path, entries, top, ...(nextSkip === undefined ? {} : { nextSkip }) }, now()),
      ),
    );
  }

  /** The entry element inside a PUT body, checked against the kind of resource the path names. */
  async function putBody(req: IncomingMessage, expected: string): Promise<Record<string, unknown>> {
    const { root, body } = readEntry(await readBody(req, maxBodyBytes));
    if (root !== expected) {
      throw new HttpError(400, `Expected a ${expected} at this address, got ${root.slice(0, 60)}.`);
    }
    return body;
  }

  async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    route: AdminRoute,
    url: URL,
  ): Promise<void> {
    const ctx: AtomContext = { host: hostOf(req) };
    const method = req.method ?? 'GET';
    const isUpdate = req.headers['if-match'] !== undefined;

    switch (route.kind) {
      case 'namespace':
        if (method !== 'GET') break;
        return entity(res, 200, namespaceEntry(ctx, namespaceName, startedAt));

      case 'topicList':
        if (method !== 'GET') break;
        return listFeed(res, ctx, url, 'Topics', '$Resources/Topics', (skip, top) => {
          const { slice, nextSkip } = page(broker.listTopics(), skip, top);
          const entries = slice.map((t) =>
            topicEntry(ctx, t, broker.getTopicRuntime(t.name), policiesOf(t.name)),
          );
          return nextSkip === undefined ? { entries } : { entries, nextSkip };
        });

      case 'queueList':
        if (method !== 'GET') break;
        return listFeed(res, ctx, url, 'Queues', '$Resources/Queues', (skip, top) => {
          const { slice, nextSkip } = page(broker.listQueues(), skip, top);
          const entries = slice.map((q) =>
            queueEntry(ctx, q, broker.getQueueRuntime(q.name), policiesOf(q.name)),
          );
          return nextSkip === undefined ? { entries } : { entries, nextSkip };
        });

      case 'topic': {
        // `/{name}` is a topic or a queue (one name space): GET and DELETE follow what exists, PUT what is sent.
        const name = route.topic;
        const kind = broker.entityKind(name);
        if (method === 'GET') {
          if (kind === 'queue') return entity(res, 200, queueFragment(ctx, name));
          return entity(res, 200, topicFragment(ctx, name));
        }
        if (method === 'DELETE') {
          if (kind === 'queue') broker.deleteQueue(name);
          else broker.deleteTopic(name);
          access?.policies.setEntityPolicies(name, []);
          return send(res, 200, undefined, '');
        }
        if (method !== 'PUT') break;
        const { root, body: entryBody } = readEntry(await readBody(req, maxBodyBytes));
        if (root === 'QueueDescription') {
          const fields = readQueueDescription(entryBody);
          const policies = requestedPolicies(entryBody);
          if (isUpdate) {
            broker.updateQueue({
              userMetadata: undefined,
              forwardTo: undefined,
              forwardDeadLetteredMessagesTo: undefined,
              ...fields,
              name,
            });
            // As for topics: an update without AuthorizationRules keeps the queue's policies.
            if (policies !== undefined) access?.policies.setEntityPolicies(name, policies);
          } else {
            broker.createQueue({ ...fields, name });
            access?.policies.setEntityPolicies(name, policies ?? []);
          }
          return entity(res, isUpdate ? 200 : 201, queueFragment(ctx, name));
        }
        if (root !== 'TopicDescription') {
          throw new HttpError(
            400,
            `Expected a TopicDescription or QueueDescription at this address, got ${root.slice(0, 60)}.`,
          );
        }
        const body = entryBody;
        const fields = readTopicDescription(body);
        const policies = requestedPolicies(body);
        if (isUpdate) {
          // PUT replaces the description: a field the client left out (only ever the optional ones) is cleared.
          // AuthorizationRules are the exception: an update without them keeps the topic's policies, so that a
          // tool that rewrites settings does not silently revoke every entity key.
          broker.updateTopic({ userMetadata: undefined, ...fields, name });
          if (policies !== undefined) access?.policies.setEntityPolicies(name, policies);
          return entity(res, 200, topicFragment(ctx, name));
        }
        broker.createTopic({ ...fields, name });
        // A new topic starts with exactly the policies it was created with (none left from an earlier namesake).
        access?.policies.setEntityPolicies(name, policies ?? []);
        return entity(res, 201, topicFragment(ctx, name));
      }

      case 'policyList': {
        if (method !== 'GET') break;
        if (!access) throw new HttpError(404, 'This admin plane has no access control.');
        const body = `[${access.policies.listNamespacePolicies().map(policyJson).join(',')}]`;
        return send(res, 200, 'application/json', body);
      }

      case 'policy': {
        if (!access) throw new HttpError(404, 'This admin plane has no access control.');
        const existing = access.policies.namespacePolicy(route.name);
        if (method === 'GET') {
          if (!existing)
            throw new HttpError(404, `No shared access policy named '${route.name.slice(0, 60)}'.`);
          return send(res, 200, 'application/json', policyJson(existing));
        }
        if (method === 'DELETE') {
          if (!access.policies.deleteNamespacePolicy(route.name)) {
            throw new HttpError(404, `No shared access policy named '${route.name.slice(0, 60)}'.`);
          }
          return send(res, 200, undefined, '');
        }
        if (method !== 'PUT') break;
        let json: unknown;
        try {
          json = JSON.parse(await readBody(req, maxBodyBytes));
        } catch (err) {
          if (err instanceof HttpError) throw err;
          throw new HttpError(400, 'The request body is not JSON.');
        }
        const parsed = policyBodySchema.safeParse(json);
        if (!parsed.success) {
          throw new HttpError(
            400,
            `Invalid policy: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`,
          );
        }
        const keyName = policyInputSchema.shape.keyName.safeParse(route.name);
        if (!keyName.success)
          throw new HttpError(400, `Invalid policy name: ${keyName.error.issues[0]?.message ?? 'invalid'}`);
        const policy = toPolicy({ ...parsed.data, keyName: keyName.data });
        access.policies.setNamespacePolicy(policy);
        return send(res, existing ? 200 : 201, 'application/json', policyJson(policy));
      }

      case 'subscriptionList':
        if (method !== 'GET') break;
        return listFeed(res, ctx, url, 'Subscriptions', `${route.topic}/Subscriptions`, (skip, top) => {
          const { slice, nextSkip } = page(broker.listSubscriptions(route.topic), skip, top);
          const entries = slice.map((s) =>
            subscriptionEntry(ctx, s, broker.getSubscriptionRuntime(s.topicName, s.subscriptionName)),
          );
          return nextSkip === undefined ? { entries } : { entries, nextSkip };
        });

      case 'subscription': {
        const { topic, subscription } = route;
        if (method === 'GET') return entity(res, 200, subscriptionFragment(ctx, topic, subscription));
        if (method === 'DELETE') {
          broker.deleteSubscription(topic, subscription);
          return send(res, 200, undefined, '');
        }
        if (method !== 'PUT') break;
        const { description, defaultRule } = readSubscriptionDescription(
          await putBody(req, 'SubscriptionDescription'),
        );
        const ids = { topicName: topic, subscriptionName: subscription };
        if (isUpdate) {
          broker.updateSubscription({
            forwardTo: undefined,
            forwardDeadLetteredMessagesTo: undefined,
            userMetadata: undefined,
            ...description,
            ...ids,
          });
          return entity(res, 200, subscriptionFragment(ctx, topic, subscription));
        }
        broker.createSubscription({ ...description, ...ids }, defaultRule);
        return entity(res, 201, subscriptionFragment(ctx, topic, subscription));
      }

      case 'ruleList':
        if (method !== 'GET') break;
        return listFeed(
          res,
          ctx,
          url,
          'Rules',
          `${route.topic}/Subscriptions/${route.subscription}/Rules`,
          (skip, top) => {
            const { slice, nextSkip } = page(broker.listRules(route.topic, route.subscription), skip, top);
            const entries = slice.map((r) => ruleEntry(ctx, route.topic, route.subscription, r));
            return nextSkip === undefined ? { entries } : { entries, nextSkip };
          },
        );

      case 'rule': {
        const { topic, subscription, rule } = route;
        if (method === 'GET')
          return entity(
            res,
            200,
            ruleEntry(ctx, topic, subscription, broker.getRule(topic, subscription, rule)),
          );
        if (method === 'DELETE') {
          broker.deleteRule(topic, subscription, rule);
          return send(res, 200, undefined, '');
        }
        if (method !== 'PUT') break;
        const parsed = readRuleDescription(await putBody(req, 'RuleDescription'));
        // The address names the rule; a different <Name> in the body is ignored, as the address is what was signed.
        const description = { ...parsed, name: rule };
        const saved = isUpdate
          ? broker.updateRule(topic, subscription, description)
          : broker.createRule(topic, subscription, description);
        return entity(res, isUpdate ? 200 : 201, ruleEntry(ctx, topic, subscription, saved));
      }
    }
    throw new HttpError(405, `${method} is not supported on this resource.`);
  }

  return (req, res) => {
    const method = req.method ?? 'GET';
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://emulator.invalid');
    } catch {
      sendError(res, 400, 'The request URL is not valid.');
      req.resume();
      return;
    }
    const run = async (): Promise<void> => {
      // Before anything else, and before a body is read: an unauthenticated caller learns nothing about routes.
      access?.authorizeHttp(req.headers.authorization, url.pathname, 'Manage');
      const route = matchRoute(url.pathname);
      if (!route) throw new HttpError(404, `No admin resource at ${url.pathname.slice(0, 200)}.`);
      await handle(req, res, route, url);
    };
    run()
      .catch((err: unknown) => {
        const { status, detail } = describeError(err);
        if (status >= 500) log?.error({ method, path: url.pathname, err: detail }, 'admin request failed');
        else log?.debug({ method, path: url.pathname, status }, 'admin request rejected');
        sendError(res, status, detail);
      })
      .finally(() => {
        // Anything the handler did not read (GET/DELETE bodies, rejected PUTs) is drained so keep-alive works.
        if (!req.readableEnded) req.resume();
      });
  };
}

const policyBodySchema = policyInputSchema.omit({ keyName: true }).strict();

function describeError(err: unknown): { status: number; detail: string } {
  if (err instanceof HttpError) return { status: err.status, detail: err.message };
  if (err instanceof AccessDenied) return { status: 401, detail: err.message };
  if (err instanceof PolicyError) return { status: 400, detail: err.message };
  if (err instanceof z.ZodError) return { status: 400, detail: err.issues.map((i) => i.message).join('; ') };
  if (err instanceof BrokerError) return { status: STATUS_FOR_CODE[err.code] ?? 500, detail: err.message };
  if (err instanceof AtomFormatError || err instanceof RouteError)
    return { status: 400, detail: err.message };
  // Unexpected failures: the message only (a stack would leak internals and is useless to the client).
  const message = err instanceof Error ? err.message : String(err);
  return { status: 500, detail: `The emulator's admin plane failed: ${message}` };
}
