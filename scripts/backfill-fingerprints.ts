// Entry point of `npm run backfill:fingerprints`: gives status rows written before failure groups existed their
// fingerprint (lib/store/backfillFingerprints.ts). Reads the store settings like the console (NIMBUS_COSMOS_ENDPOINT,
// NIMBUS_COSMOS_KEY, NIMBUS_COSMOS_DATABASE). `--all` recomputes every failed row's fingerprint (after the
// normalisation rules changed). Safe to run while the Resolver runs, and to run again.
import { backfillFingerprints, createStore } from '../lib/store/index.ts';

const all = process.argv.includes('--all');
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
    onProgress: (p) => process.stderr.write(`scanned ${p.scanned}, updated ${p.updated}\n`),
  });
  console.log(`fingerprints: ${r.scanned} failed rows scanned, ${r.updated} updated, ${r.skipped} changed meanwhile (already current), ${r.corrupt} unreadable`);
} finally {
  await store.close();
}
