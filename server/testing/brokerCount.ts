// How many messages the embedded broker holds across every subscription of every topic: a test's way to say "nothing
// was sent" (the count did not move) or "it was sent" (it grew), whatever topic or subscription the message went to.
import type { Broker } from '../../emulator/broker/api.ts';

export function messagesOnBroker(broker: Broker): number {
  return broker.listTopics().reduce((n, t) => n + broker.listSubscriptions(t.name).reduce((m, s) => m + broker.getSubscriptionRuntime(t.name, s.subscriptionName).totalMessageCount, 0), 0);
}
