// `npm run bench`: runs every benchmark in turn and prints each one's markdown table (figures with their
// ratio to a baseline measured in the same run). Benchmarks run one after another so they do not compete
// for the machine's cores.

import { performance } from 'node:perf_hooks';
import type { BenchResult } from './report.ts';
import { toMarkdown } from './report.ts';
import { runEmulatorBench } from './emulator.ts';

const benchmarks: Array<{ name: string; run: () => Promise<BenchResult> }> = [
  { name: 'emulator', run: runEmulatorBench },
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
