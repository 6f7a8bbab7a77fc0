// Translating broker failures into what the unmodified client understands: an AMQP error condition on links
// and dispositions (core-amqp's ConditionErrorNameMapper), or a status code plus `errorCondition` on
// $management replies. The condition decides the ServiceBusError code the application sees.

import { BrokerError } from '../broker/api.ts';
import type { BrokerErrorCode } from '../broker/api.ts';
import type { AmqpErrorFields } from './rhea-types.ts';

const CONDITIONS: Record<BrokerErrorCode, { condition: string; status: number }> = {
  // amqp:not-found alone maps to ServiceCommunicationProblem; the description below is what makes the client
  // report MessagingEntityNotFound (core-amqp matches "The messaging entity ... could not be found").
  EntityNotFound: { condition: 'amqp:not-found', status: 404 },
  EntityAlreadyExists: { condition: 'com.microsoft:entity-already-exists', status: 409 },
  SendDisabled: { condition: 'com.microsoft:entity-disabled', status: 403 },
  ReceiveDisabled: { condition: 'com.microsoft:entity-disabled', status: 403 },
  MessageLockLost: { condition: 'com.microsoft:message-lock-lost', status: 410 },
  SessionLockLost: { condition: 'com.microsoft:session-lock-lost', status: 410 },
  SessionCannotBeLocked: { condition: 'com.microsoft:session-cannot-be-locked', status: 409 },
  // acceptNextSession with nothing to hand out: the client reports ServiceTimeout, as it does against Azure.
  NoSessionAvailable: { condition: 'com.microsoft:timeout', status: 408 },
  MessageNotFound: { condition: 'com.microsoft:message-not-found', status: 404 },
  // com.microsoft:message-size-exceeded is not in the client's table; this one maps to MessageSizeExceeded.
  MessageSizeExceeded: { condition: 'amqp:link:message-size-exceeded', status: 413 },
  QuotaExceeded: { condition: 'amqp:resource-limit-exceeded', status: 403 },
  InvalidOperation: { condition: 'amqp:not-allowed', status: 400 },
  // What Azure answers when it cannot serve a request; the clients retry it (core-amqp: InternalServerError).
  InternalError: { condition: 'amqp:internal-error', status: 500 },
  BadRequest: { condition: 'amqp:invalid-field', status: 400 },
};

/** AMQP error for a failure; `entity` names the entity for not-found descriptions. */
export function amqpConditionFor(err: unknown, entity?: string): AmqpErrorFields {
  if (err instanceof BrokerError) {
    const mapped = CONDITIONS[err.code];
    let description = err.message;
    if (err.code === 'EntityNotFound' && !/The messaging entity .* could not be found/i.test(description)) {
      description = `The messaging entity '${entity ?? 'unknown'}' could not be found. ${description}`;
    }
    return { condition: mapped.condition, description };
  }
  return { condition: 'amqp:internal-error', description: 'The emulator failed to process the request.' };
}

/** Status code and condition for a $management reply. */
export function managementStatusFor(err: unknown, entity?: string): AmqpErrorFields & { status: number } {
  const fields = amqpConditionFor(err, entity);
  const status = err instanceof BrokerError ? CONDITIONS[err.code].status : 500;
  return { ...fields, status };
}

/** A malformed request from a client, reported as BadRequest. */
export function badRequest(message: string): BrokerError {
  return new BrokerError('BadRequest', message);
}
