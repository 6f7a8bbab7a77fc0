// `npm run bench`: runs every benchmark in turn and prints each one's markdown table (figures with their
// ratio to a baseline measured in the same run). Benchmarks run one after another so they do not compete
// for the machine's cores.

import { performance } from 'node:perf_hooks';
import type { BenchResult } from './report.ts';
import { toMarkdown } from './report.ts';
import { runEmulatorBench } from './emulator.ts';
import { runResolverBench } from './resolver.ts';
import { runConsoleBench } from './console.ts';
import { runPageReadsBench } from './pageReads.ts';
import { runFailureGroupsBench } from './failureGroups.ts';
import { runJobsBench } from './jobs.ts';
import { runPipelineBench } from './pipeline.ts';
import { runDurabilityBench } from './durability.ts';
import { runScaleOutBench } from './scaleout.ts';
import { seriesAsTable } from './series.ts';

/** The Resolver benchmark reports its own shape; put it in the common table form. */
async function resolverAsTable(): Promise<BenchResult> {
  const r = await runResolverBench();
  return {
    title: 'Resolver (records per message: history + guarded status write, received from the emulator)',
    rows: [
      {
        figure: 'baseline: raw upserts to the embedded Cosmos server',
        value: r.rawUpsertsPerSec,
        unit: 'msg/s',
        baseline: r.rawUpsertsPerSec,
        better: 'higher',
      },
      {
        figure: 'Resolver messages recorded',
        value: r.resolverMessagesPerSec,
        unit: 'msg/s',
        baseline: r.rawUpsertsPerSec,
        better: 'higher',
        target: r.target * r.rawUpsertsPerSec,
      },
      {
        figure: 'the store work alone (recordOutcomes per event, no Service Bus)',
        value: r.storeOnlyMessagesPerSec,
        unit: 'msg/s',
        baseline: r.rawUpsertsPerSec,
        better: 'higher',
      },
      {
        figure: 'the Service Bus path alone (the Resolver with a store that does no I/O)',
        value: r.serviceBusOnlyMessagesPerSec,
        unit: 'msg/s',
        baseline: r.rawUpsertsPerSec,
        better: 'higher',
      },
      {
        figure: 'both parts back to back (1 / (1/store + 1/Service Bus))',
        value: r.fromPartsMessagesPerSec,
        unit: 'msg/s',
        baseline: r.rawUpsertsPerSec,
        better: 'higher',
      },
    ],
    settings: { messages: r.messages, 'target ratio': r.target },
  };
}

const benchmarks: Array<{ name: string; run: () => Promise<BenchResult> }> = [
  { name: 'emulator', run: runEmulatorBench },
  { name: 'resolver', run: resolverAsTable },
  { name: 'series', run: seriesAsTable },
  { name: 'console', run: runConsoleBench },
  { name: 'page-reads', run: runPageReadsBench },
  { name: 'failure-groups', run: runFailureGroupsBench },
  { name: 'jobs', run: runJobsBench },
  { name: 'pipeline', run: runPipelineBench },
  { name: 'durability', run: runDurabilityBench },
  { name: 'scaleout', run: () => runScaleOutBench() },
];

const only = process.argv.slice(2);
let failed = false;
for (const b of benchmarks) {
  if (only.length > 0 && !only.includes(b.name)) continue;
  const start = performance.now();
  try {
    const result = await b.run();
    console.log(toMarkdown(result));
    console.log(`\n(${b.name}: ${((performance.now() - start) / 1000).toFixed(1)} s)\n`);
  } catch (err) {
    failed = true;
    console.error(`benchmark ${b.name} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}
process.exit(failed ? 1 : 0);
