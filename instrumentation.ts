// Next's register() hook: runs once when the console's server starts, whichever server that is (`npm run console`,
// `next start`, the standalone server.js in the Docker image, or `npm start`'s in-process console). It starts the
// console's background duties (server/background.ts), so a console replica is complete on its own. Only in the
// Node.js runtime: the duties use Node-only clients, and the edge runtime (proxy.ts) must not load them.
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== 'nodejs') return;
  // Traces and metrics when OTEL_EXPORTER_OTLP_ENDPOINT is set (once per process; nothing loads otherwise).
  const { startTelemetry } = await import('./lib/telemetry/start.ts');
  await startTelemetry('nimbus-console');
  const { startBackgroundDuties } = await import('./server/background.ts');
  // Not awaited: a store that is slow to answer must not hold up the first request (the duties retry on their own).
  void startBackgroundDuties();
  // Next's own server exits on SIGTERM without stopping the duties: their leases would be held until they run out.
  // Its handler runs inside ours instead (server/shutdown.ts); a launcher's console keeps its own handlers.
  const { stopConsoleGracefullyOnSignals } = await import('./server/shutdown.ts');
  stopConsoleGracefullyOnSignals();
}
