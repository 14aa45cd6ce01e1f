// What a subscription's rules decide for one message: the copies it takes and the property changes of each
// (docs/filters.md, "Actions and copies"). The router asks; the rule engine answers through this interface.

/** The copies a subscription takes for one message, decided by its rules. */
export interface CopyPlan {
  /** Name of the rule whose action made this copy (set as the RuleName property), none for the plain copy. */
  ruleName?: string;
  /** Application-property changes of the action: a value, or null to remove the property. */
  props?: Record<string, unknown>;
  /** System-property changes of the action, by Service Bus name (To, Label, CorrelationId, SessionId, …). */
  sys?: Record<string, unknown>;
}

/** What a subscription's rules decide for one message. */
export interface RulePlan {
  copies: CopyPlan[];
  /** A filter or action failed: the message is dead-lettered in the subscription with this reason. */
  error?: { reason: string; description: string };
}

/** A subscription's compiled rules. */
export interface SubscriptionRules {
  /** The copies for a message; `view` is the protocol layer's filter view of it (see IncomingMessage.view). */
  plan(view: unknown): RulePlan;
}
