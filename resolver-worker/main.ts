// `npm run resolver`: the Resolver as its own process. Reads its settings from the environment, opens the store,
// runs until SIGINT/SIGTERM, then stops gracefully (messages whose writes ended settle, one still being written
// comes back) and flushes buffered counters.
import { pino } from 'pino';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { cosmosConnectionSchema, createCosmosClient, createStore, LeaseStore } from '../lib/store/index.ts';
import { startInstanceWatch, type InstanceWatch } from './liveness.ts';
import { ConfigError, readResolverConfig } from './config.ts';
import { startResolver, type ResolverHandle } from './index.ts';
import { startTelemetry } from '../lib/telemetry/start.ts';
import { STOPPED, untilStopped } from './untilStopped.ts';

// The stop's waits after the store's close, each bounded so that the whole stop stays within a container platform's
// grace period when the store (or the OTLP collector) does not answer (docs/deploy.md "Stopping a Resolver").
/** The instance lease's release: given up, the lease lapses (15 s) and a survivor finds nothing owed. */
const LEASE_RELEASE_STOP_MS = 2_000;
/** The telemetry flush, run beside the store's close (so it adds nothing while that is within its own bounds). */
const TELEMETRY_STOP_MS = 5_000;

async function main(): Promise<void> {
  let config;
  try {
    config = readResolverConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const log = pino({ name: 'resolver', level: config.logLevel });
  // Traces and the Resolver's metrics go to OTEL_EXPORTER_OTLP_ENDPOINT when it is set; otherwise nothing loads.
  const telemetry = await startTelemetry('nimbus-resolver');
  if (telemetry.enabled) log.info({}, 'Resolver: exporting traces and metrics over OTLP');
  // This instance's id: its lease below, and its stamps on the rows it writes (lib/store/counters.ts).
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  // Counter deltas are buffered briefly: it takes the counter round trip off the per-message path (docs/store.md).
  // `warn`: what the store has no caller to report to (a settle pass that could not recount) goes to this log too.
  const store = await createStore({ ...config.cosmos, counterFlushMs: 250, counterOwner: owner, warn: (fields, message) => log.warn(fields, message) });
  // Announces this instance and watches the others: a killed instance's unflushed counter deltas are applied by a
  // survivor (./liveness.ts).
  // Its own client, so the lease is released after the store (and its counter buffer) is closed.
  const leaseClient = createCosmosClient(cosmosConnectionSchema.parse({ ...config.cosmos }));
  const leases = new LeaseStore(leaseClient.database(config.cosmos.database));
  // Set in this order: the lease, then the Resolver. Nothing is received before the lease is held: a survivor finds
  // the instances to recover through their lapsed leases (./liveness.ts), so rows stamped by an instance that never
  // held one (its lease take failed, or a signal killed it meanwhile) left their unflushed deltas to nobody.
  let watch: InstanceWatch | undefined;
  let resolver: ResolverHandle | undefined = undefined;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const declaredDead = watch?.declaredDead.aborted ?? false;
    log.info({ signal }, 'Resolver: stopping');
    // The broker's part is bounded (NIMBUS_RESOLVER_BROKER_STOP_MS): a broker that answers no settlement must not
    // hold the counter flush below past the platform's grace period, after which the process is killed unflushed.
    // No Resolver yet (the signal came while the lease was being taken): nothing was received, nothing to stop.
    await resolver?.stop();
    // The telemetry flush goes to the OTLP endpoint, not the store: beside the store's close, bounded by a step of it.
    const telemetryStopped = untilStopped(telemetry.shutdown(), AbortSignal.timeout(TELEMETRY_STOP_MS));
    // False when a counter delta is left (a write still running, in doubt, a patch unanswered): its stamp is above
    // this instance's `flushed`, so the lease is left to lapse and a survivor applies it (./liveness.ts).
    const counted = await store.close();
    if ((await telemetryStopped) === STOPPED)
      log.warn({ telemetryStopMs: TELEMETRY_STOP_MS }, 'Resolver: the telemetry flush did not end within its stop bound; given up');
    // Flushes a survivor's recovery refused (this instance was taken for dead): those deltas are gone for good.
    const refused = store.countsRefusedEndpoints;
    if (refused.length > 0)
      log.error(
        { endpoints: refused },
        `Resolver: counter flushes were refused where a survivor had recovered this instance; those endpoints' counters are too low: run npm run recount -- ${refused.join(' ')}`,
      );
    // After the counters are flushed: from here nobody needs to recover anything for this instance. Declared dead,
    // it holds no lease any more (a survivor claimed it): nothing to release or leave.
    // Bounded: a store that does not answer held the release for the client's request time-out and its retries. Given
    // up, the lease lapses and a survivor's check finds nothing owed (every delta was flushed, or it was claimed).
    // No lease (its take had not ended): nothing to release; one whose take ends after this lapses, with nothing owed.
    if (watch && (counted || declaredDead)) {
      if ((await untilStopped(watch.stop().catch(() => undefined), AbortSignal.timeout(LEASE_RELEASE_STOP_MS))) === STOPPED)
        log.warn(
          { leaseReleaseStopMs: LEASE_RELEASE_STOP_MS },
          'Resolver: releasing the instance lease did not end within its stop bound; given up (it lapses, and a survivor finds nothing owed: the counters were flushed)',
        );
    } else if (watch) log.warn({}, 'Resolver: counter deltas left unapplied at the stop; the lease is left to lapse so a survivor applies them');
    leaseClient.dispose();
    // Non-zero when taken for dead, so the orchestrator starts it again (with a new id and a lease of its own).
    process.exit(declaredDead ? 1 : 0);
  };
  // Before the lease take, which waits on the store: a signal meanwhile stops the process through shutdown instead of
  // Node's default kill.
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  try {
    watch = await startInstanceWatch({ store, leases, owner, log });
  } catch (err) {
    // A signal's stop owns the exit (its disposal of the lease client may be what ended the take).
    if (stopping) return;
    // Nothing was received or written: close what is open (bounded) and exit 1 through main().catch.
    await store.close().catch(() => false);
    leaseClient.dispose();
    throw new Error(`could not take this instance's lease, so nothing was received: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  // Stopped while the lease was being taken: shutdown releases the lease if it still reads it, else it lapses.
  if (stopping) return;
  // A survivor claimed this instance's lapsed lease (it was paused or cut off past its TTL): its flushes are refused
  // where the survivor recovered it, and a death now would go unseen (no lease). Stop, and let a restart take a new id.
  watch.declaredDead.addEventListener('abort', () => void shutdown('declared dead'), { once: true });
  resolver = startResolver({
    serviceBusConnection: config.serviceBusConnection,
    store,
    concurrency: config.concurrency,
    brokerStopMs: config.brokerStopMs,
    log,
  });
}

main().catch((err: unknown) => {
  // The message only: errors from the clients never carry the key, and the stack is enough to find the place.
  console.error('Resolver failed to start:', err instanceof Error ? err.message : String(err));
  process.exit(1);
});
