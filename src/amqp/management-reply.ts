// The shape of a `$management` reply before it is addressed, shared by the management node and the rule
// operations it dispatches to (kept apart so neither module imports the other), and its application properties.

import rhea, { amqpInt } from './rhea.js';

/** A management reply before it is addressed. */
export interface ManagementReply {
  statusCode: number;
  statusDescription: string;
  errorCondition?: string;
  body?: Record<string, unknown>;
}

/**
 * The reply's application properties: `statusCode` an AMQP int and the condition as a symbol under both keys
 * Service Bus clients read, `errorCondition` (the .NET SDK casts it to a symbol; without it the condition is
 * guessed from the status, so 410 reads as MessageLockLost) and `error-condition` (the JS SDK).
 */
export function replyProperties(reply: ManagementReply): Record<string, unknown> {
  const props: Record<string, unknown> = { statusCode: amqpInt(reply.statusCode), statusDescription: reply.statusDescription };
  if (reply.errorCondition) {
    const condition = rhea.types.wrap_symbol(reply.errorCondition);
    props.errorCondition = condition;
    props['error-condition'] = condition;
  }
  return props;
}
