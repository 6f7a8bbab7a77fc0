// The backlog collector (issue 16): once a minute, each topic's Service Bus backlog (active and dead-letter
// messages summed over its subscriptions; scheduled messages, which Service Bus counts per topic) is stored as a
// sample in the metrics container. Endpoint topics are named after their endpoint, so an endpoint's backlog is
// its topic's. Read from the admin client's runtime properties: no message is received or locked.
import type { ServiceBusAdministrationClient } from '@azure/service-bus';
import type { TimeSeriesStore } from '../../lib/store/index.ts';

export interface TopicBacklog {
  topic: string;
  active: number;
  deadLetter: number;
  scheduled: number;
}

async function listAll<T>(iter: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of iter) out.push(x);
  return out;
}

export async function readBacklog(admin: ServiceBusAdministrationClient): Promise<TopicBacklog[]> {
  const topics = await listAll(admin.listTopics());
  const out: TopicBacklog[] = [];
  for (const t of topics) {
    const [subs, runtime] = await Promise.all([
      listAll(admin.listSubscriptionsRuntimeProperties(t.name)),
      admin.getTopicRuntimeProperties(t.name).catch(() => undefined),
    ]);
    out.push({
      topic: t.name,
      active: subs.reduce((a, s) => a + (s.activeMessageCount ?? 0), 0),
      deadLetter: subs.reduce((a, s) => a + (s.deadLetterMessageCount ?? 0) + (s.transferDeadLetterMessageCount ?? 0), 0),
      scheduled: runtime?.scheduledMessageCount ?? 0,
    });
  }
  return out;
}

/** Samples every topic and stores the samples under the minute of `at`. Returns them (the alert rules read them too). */
export async function collectBacklog(admin: ServiceBusAdministrationClient, series: TimeSeriesStore, at: Date): Promise<TopicBacklog[]> {
  const samples = await readBacklog(admin);
  await series.recordBacklog(at, samples);
  return samples;
}
