// The failures the demo's handlers raise. Each is an ordinary Error subclass, so the failure-disposition
// classifier and the retry policies decide what happens to it, exactly as for a real adapter.

/** Billing: an invoice order above the customer's credit limit. No retry policy: it waits for an operator. */
export class CreditApprovalRequiredError extends Error {
  override readonly name = 'CreditApprovalRequiredError';
}

/** CRM: the CRM's API is throttling. A retry policy matches it, so a later RetryRequest recovers the event. */
export class CrmUnavailableError extends Error {
  override readonly name = 'CrmUnavailableError';
}
