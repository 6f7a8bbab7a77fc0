// Entry point of `npm run backfill:fingerprints`: gives status rows written before failure groups existed their
// fingerprint (lib/store/backfillFingerprints.ts). Reads the store settings like the console (NIMBUS_COSMOS_ENDPOINT,
// NIMBUS_COSMOS_KEY, NIMBUS_COSMOS_DATABASE). `--all` recomputes every failed row's fingerprint (after the
// normalisation rules changed). Then rebuilds the failure-group aggregates of every endpoint with failed rows from
// the rows (also the repair of an aggregate that drifted; `--no-aggregates` skips it). Safe to run while the
// Resolver runs, and to run again.
import { backfillFingerprints, createStore } from '../lib/store/index.ts';

const all = process.argv.includes('--all');
const aggregates = !process.argv.includes('--no-aggregates');
const endpoint = process.env.NIMBUS_COSMOS_ENDPOINT;
const key = process.env.NIMBUS_COSMOS_KEY;
const database = process.env.NIMBUS_COSMOS_DATABASE ?? 'nimbus';
if (!endpoint || !key) {
  console.error('backfill:fingerprints needs NIMBUS_COSMOS_ENDPOINT and NIMBUS_COSMOS_KEY (and NIMBUS_COSMOS_DATABASE)');
  process.exit(2);
}
const store = await createStore({ endpoint, key, database });
try {
  const r = await backfillFingerprints(store, {
    all,
    aggregates,
    onProgress: (p) => process.stderr.write(`scanned ${p.scanned}, updated ${p.updated}, endpoints rebuilt ${p.endpointsRebuilt}\n`),
  });
  console.log(`fingerprints: ${r.scanned} failed rows scanned, ${r.updated} updated, ${r.skipped} changed meanwhile (already current), ${r.corrupt} unreadable; failure groups rebuilt on ${r.endpointsRebuilt} endpoints (${r.groupsRebuilt} groups)`);
} finally {
  await store.close();
}
