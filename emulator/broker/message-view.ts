// The MessageView the SQL engine reads and writes: Service Bus SQL names mapped onto rhea's fields.

import type { MessageView } from '../sql/api.ts';
import { SqlError } from '../sql/api.ts';
import type { WireMessage } from './api.ts';

/** Broker-owned facts about a copy that SQL can read but not write. */
export interface SystemFacts {
  sequenceNumber?: number;
  enqueuedTime?: number;
  deliveryCount?: number;
  scheduledEnqueueTime?: number;
  expiresAt?: number;
  size?: number;
}

const WRITABLE: Record<string, string> = {
  messageid: 'message_id',
  correlationid: 'correlation_id',
  to: 'to',
  replyto: 'reply_to',
  label: 'subject',
  subject: 'subject',
  sessionid: 'group_id',
  replytosessionid: 'reply_to_group_id',
  contenttype: 'content_type',
};

function plain(v: unknown): unknown {
  // rhea hands uuids and binary ids as Buffers; SQL compares them as strings.
  return Buffer.isBuffer(v) ? v.toString('hex') : v;
}

export function messageView(m: WireMessage, facts: SystemFacts = {}): MessageView {
  const fields = m as unknown as Record<string, unknown>;
  const props = (): Record<string, unknown> => {
    if (!m.application_properties) m.application_properties = {};
    return m.application_properties as Record<string, unknown>;
  };
  return {
    getSystem(name: string): unknown {
      const field = WRITABLE[name];
      if (field) {
        const v = fields[field];
        return v === null ? undefined : plain(v);
      }
      switch (name) {
        case 'deliverycount':
          return facts.deliveryCount ?? 0;
        case 'enqueuedtimeutc':
          return facts.enqueuedTime === undefined ? undefined : new Date(facts.enqueuedTime);
        case 'sequencenumber':
          return facts.sequenceNumber;
        case 'scheduledenqueuetimeutc':
          return facts.scheduledEnqueueTime === undefined ? undefined : new Date(facts.scheduledEnqueueTime);
        case 'expiresatutc':
          return facts.expiresAt === undefined || !Number.isFinite(facts.expiresAt)
            ? undefined
            : new Date(facts.expiresAt);
        case 'size':
          return facts.size;
        case 'timetolive':
          return typeof m.ttl === 'number' ? m.ttl : undefined;
        default:
          return undefined;
      }
    },
    setSystem(name: string, value: unknown): void {
      const field = WRITABLE[name];
      if (!field) throw new SqlError(`System property '${name}' cannot be set by a rule action.`);
      if (value === undefined || value === null) delete fields[field];
      else fields[field] = typeof value === 'string' ? value : String(value);
    },
    getUser(name: string): unknown {
      const p = m.application_properties as Record<string, unknown> | undefined;
      return p?.[name];
    },
    hasUser(name: string): boolean {
      const p = m.application_properties as Record<string, unknown> | undefined;
      return p !== undefined && Object.prototype.hasOwnProperty.call(p, name);
    },
    setUser(name: string, value: unknown): void {
      props()[name] = value;
    },
    removeUser(name: string): void {
      const p = m.application_properties as Record<string, unknown> | undefined;
      if (p) delete p[name];
    },
  };
}
