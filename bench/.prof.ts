import { runResolverBench } from './resolver.ts';
const t = performance.now();
const r = await runResolverBench({ events: 300 });
console.log(r, (globalThis as any).prof, performance.now() - t);
