// Errors of the rule engine. Refusals at rule creation carry a code; errors/table.ts maps it to the AMQP condition
// Service Bus uses (docs/filters.md, "Refusals and their conditions") — never a retryable one, because the JS SDK
// retries those (core-amqp's retryable errors). Evaluation failures carry a .NET exception type name, which Service Bus
// uses as the dead-letter reason (docs/filters.md, "Evaluation errors", 2018 dead-letter doc: reason =
// exception.GetType().Name, description = exception.Message).

/** Why a rule was refused: a bad argument, a limit, a duplicate name, or an unknown rule. */
export type RuleErrorCode =
  | 'InvalidArgument'
  | 'ArgumentOutOfRange'
  | 'AlreadyExists'
  | 'NotFound';

/** A rule, filter or action refused when it is created (`add-rule`, config load). */
export class RuleDefinitionError extends Error {
  constructor(
    readonly code: RuleErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'RuleDefinitionError';
  }
}

/** Where a syntax error is: 1-based line and column, and the offending token text (empty at the end). */
export interface SyntaxPosition {
  line: number;
  column: number;
  token: string;
}

// The message imitates the service's ATOM wording (azure-service-bus#15): `There was an error parsing the filter
// expression. [Token line=1, column=1, Token in error= =, Additional details= Unrecognized character. '=']`.
/** An invalid SQL filter or action expression (`com.microsoft:argument-error`, or out-of-range for limits). */
export class FilterSyntaxError extends RuleDefinitionError {
  constructor(
    readonly details: string,
    readonly position: SyntaxPosition | null,
    readonly kind: 'filter' | 'action' = 'filter',
    code: RuleErrorCode = 'InvalidArgument',
  ) {
    super(code, FilterSyntaxError.format(kind, details, position));
    this.name = 'FilterSyntaxError';
  }

  /** Builds the service-style message text. */
  static format(kind: 'filter' | 'action', details: string, p: SyntaxPosition | null): string {
    const head = `There was an error parsing the ${kind} expression.`;
    if (p === null) return `${head} [Additional details= ${details}]`;
    return `${head} [Token line=${p.line}, column=${p.column}, Token in error= ${p.token}, Additional details= ${details}]`;
  }
}

/**
 * .NET exception type names used as dead-letter reasons for evaluation failures (docs/filters.md, "Evaluation errors";
 * our choice).
 */
export type EvaluationFailure = 'FilterException' | 'DivideByZeroException' | 'OverflowException' | 'InvalidCastException';

/** A filter or action that failed while evaluating one message (not a mere UNKNOWN). */
export class FilterEvaluationError extends Error {
  constructor(
    readonly reason: EvaluationFailure,
    message: string,
  ) {
    super(message);
    this.name = 'FilterEvaluationError';
  }
}
