// The validation behaviour: refuses deliveries missing the fields everything else depends on (EventId always,
// EventTypeId on an EventRequest) by dead-lettering them with a stable reason. On by default in the host.
import { MessageType } from './contract/index.ts';
import { MessageAlreadyDeadLetteredError } from './errors.ts';
import type { PipelineBehavior } from './pipeline.ts';

export const validationBehavior: PipelineBehavior = async (ctx, next) => {
  const m = ctx.message;
  let reason: string | undefined;
  if (!m.eventId) reason = 'Validation failed: EventId is required';
  else if (m.messageType === MessageType.EventRequest && !m.eventTypeId)
    reason = 'Validation failed: EventTypeId is required for EventRequest';
  if (reason) {
    await ctx.deadLetter(reason, reason);
    throw new MessageAlreadyDeadLetteredError(reason);
  }
  await next();
};
