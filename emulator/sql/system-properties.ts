// The system properties a rule may name as sys.<Name>, by their lower-cased Service Bus SQL names.
// Azure raises an error for a system property that does not exist, so unknown names are rejected at compile time.

/** Properties a SET action may change. */
const WRITABLE = [
  'messageid',
  'correlationid',
  'to',
  'replyto',
  'label',
  'sessionid',
  'replytosessionid',
  'contenttype',
  'scheduledenqueuetimeutc',
  'timetolive',
  'partitionkey',
  'viapartitionkey',
  'forcepersistence',
] as const;

/** Properties the broker assigns; a rule may read them but not change them. */
const READ_ONLY = [
  'deliverycount',
  'enqueuedtimeutc',
  'sequencenumber',
  'enqueuedsequencenumber',
  'expiresatutc',
  'size',
  'locktoken',
  'lockeduntilutc',
  'deadlettersource',
  'state',
] as const;

const WRITABLE_SET: ReadonlySet<string> = new Set(WRITABLE);
const KNOWN_SET: ReadonlySet<string> = new Set([...WRITABLE, ...READ_ONLY]);

/** System properties that hold strings: a SET converts numbers and booleans to text for these. */
export const STRING_SYSTEM_PROPERTIES: ReadonlySet<string> = new Set([
  'messageid',
  'correlationid',
  'to',
  'replyto',
  'label',
  'sessionid',
  'replytosessionid',
  'contenttype',
  'partitionkey',
  'viapartitionkey',
]);

/** Lower-cases a system property name and maps the AMQP-era alias 'subject' to 'label'; undefined if unknown. */
export function normalizeSystemName(name: string): string | undefined {
  const lower = name.toLowerCase();
  const canonical = lower === 'subject' ? 'label' : lower;
  return KNOWN_SET.has(canonical) ? canonical : undefined;
}

export function isWritableSystemProperty(canonicalName: string): boolean {
  return WRITABLE_SET.has(canonicalName);
}
