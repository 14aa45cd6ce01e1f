// The shape of a `$management` reply before it is addressed, shared by the management node and the rule
// operations it dispatches to (kept apart so neither module imports the other).

/** A management reply before it is addressed. */
export interface ManagementReply {
  statusCode: number;
  statusDescription: string;
  errorCondition?: string;
  body?: Record<string, unknown>;
}
