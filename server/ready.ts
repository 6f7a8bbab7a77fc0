// Readiness probe: one cheap call to each dependency, each bounded in time, reported separately.
import { Topic } from '../lib/contract/index.ts';
import type { ConsoleContext } from './context.ts';

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref())]);

export async function checkReady(ctx: ConsoleContext): Promise<{ ready: boolean; cosmos: string; serviceBus: string }> {
  const [cosmos, serviceBus] = await Promise.all([
    withTimeout(ctx.store.getAllCounts(), 5000).then(
      () => 'ok',
      (e: unknown) => `unreachable: ${e instanceof Error ? e.name : 'error'}`,
    ),
    withTimeout(ctx.serviceBus.admin.topicExists(Topic.Manager), 5000).then(
      (exists) => (exists ? 'ok' : 'the Manager topic does not exist (provision the topology)'),
      (e: unknown) => `unreachable: ${e instanceof Error ? e.name : 'error'}`,
    ),
  ]);
  return { ready: cosmos === 'ok' && serviceBus === 'ok', cosmos, serviceBus };
}
