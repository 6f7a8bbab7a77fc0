// The Resolver's instruments, through @opentelemetry/api only: with no SDK registered they are no-ops, and a
// host that registers a MeterProvider (or a test that passes its own Meter) gets them without code changes.
import { metrics, type Attributes, type Meter } from '@opentelemetry/api';

export const METER_NAME = 'nimbus.resolver';

export interface ResolverMetrics {
  /** A status row written (applied), tagged with the resulting status; a failed write carries error.type. */
  outcomeWritten(attrs: Attributes): void;
  /** The stale-write guard refused the write (counted instead of outcomeWritten). */
  outcomeIgnored(attrs: Attributes): void;
  auditWritten(attrs: Attributes): void;
  /** Duration of the store work for one message (history + guarded status write), ms. */
  writeDuration(ms: number, attrs: Attributes): void;
  /** A store failure handled by the budget: reason throttled|transient, action rescheduled|dead_lettered|abandoned|retried_in_place. */
  storeRetry(attrs: Attributes): void;
  /** The delay actually applied before the next attempt, seconds. */
  retryDelay(seconds: number, attrs: Attributes): void;
  /** Every message settled, by result (written, ignored, heartbeat, liveness, dropped, dead_lettered, rescheduled, abandoned). */
  message(attrs: Attributes): void;
  /** Receive-to-settlement time of one message, ms. */
  messageDuration(ms: number, attrs: Attributes): void;
}

export function createResolverMetrics(meter: Meter = metrics.getMeter(METER_NAME)): ResolverMetrics {
  const written = meter.createCounter('nimbus.resolver.outcome_written', { unit: '{records}', description: 'Status rows written' });
  const ignored = meter.createCounter('nimbus.resolver.outcome_ignored', {
    unit: '{records}',
    description: 'Status writes refused by the stale-write guard',
  });
  const audits = meter.createCounter('nimbus.resolver.audit_written', { unit: '{records}', description: 'Audits written' });
  const duration = meter.createHistogram('nimbus.resolver.write.duration', { unit: 'ms', description: 'Store work per message' });
  const retries = meter.createCounter('nimbus.resolver.store_retry', { unit: '{events}', description: 'Store failures handled by the budget' });
  const delay = meter.createHistogram('nimbus.resolver.retry.delay', { unit: 's', description: 'Delay before the next attempt' });
  const messages = meter.createCounter('nimbus.resolver.messages', { unit: '{messages}', description: 'Messages settled, by result' });
  const latency = meter.createHistogram('nimbus.resolver.message.duration', { unit: 'ms', description: 'Receive to settlement' });
  return {
    outcomeWritten: (a) => written.add(1, a),
    outcomeIgnored: (a) => ignored.add(1, a),
    auditWritten: (a) => audits.add(1, a),
    writeDuration: (ms, a) => duration.record(ms, a),
    storeRetry: (a) => retries.add(1, a),
    retryDelay: (s, a) => delay.record(s, a),
    message: (a) => messages.add(1, a),
    messageDuration: (ms, a) => latency.record(ms, a),
  };
}
