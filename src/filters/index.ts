// Public surface of the rule engine (topic subscriptions; docs/filters.md): pure functions over a rhea-independent
// message model; the broker decodes AMQP into FilterMessage and applies the fan-out result.

export { compileSqlAction, setUserProperty, type SqlAction } from './action.js';
export {
  compileCorrelationFilter,
  CORRELATION_STRING_FIELDS,
  type CorrelationField,
  type CorrelationFields,
  type CorrelationFilter,
} from './correlation.js';
export {
  FilterEvaluationError,
  FilterSyntaxError,
  RuleDefinitionError,
  type EvaluationFailure,
  type RuleErrorCode,
  type SyntaxPosition,
} from './errors.js';
export {
  bindParameters,
  compileSqlFilter,
  FALSE_FILTER,
  MAX_SQL_PARAMETERS,
  MAX_EXPRESSION_LENGTH,
  TRUE_FILTER,
  type FalseFilter,
  type Filter,
  type SqlFilter,
  type SqlParameters,
  type TrueFilter,
} from './filter.js';
export { filterMessage, getProperty, type FilterMessage, type MessageDescription, type SystemProperties } from './message.js';
export * from './rules.js';
export { systemProperty, type SystemProperty } from './system.js';
export * from './values.js';
