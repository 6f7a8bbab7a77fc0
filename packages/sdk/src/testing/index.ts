// Entry point `@nimbus/sdk/testing`: the adapter author's test harness and the reader of Resolver outcomes.
export { createTestHarness, TestHarness, type TestHarnessOptions, type HarnessHostOptions, type OutcomeQuery, type EmbeddedServiceBus } from './harness.ts';
export { OutcomeReader, ensureObserverSubscription, type OutcomeReaderOptions, type OutcomeWait } from './outcomeReader.ts';
export { OutcomeBook, readOutcomeMessage, type EventOutcome, type OutcomeEntry } from './outcomes.ts';
