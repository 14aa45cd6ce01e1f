// Correlation filters (docs/filters.md, "Correlation filters"): every set field must equal the message's value exactly
// (AND of the set fields, case-sensitive strings, topic filters doc; .NET rule filter classes); application property
// names are matched case-insensitively (.NET rule-manager live test: filter `Color` matches property `color`), values
// by type: a string never equals a number (azure-service-bus#401), numbers compare by value across AMQP numeric types
// (docs/filters.md, "Correlation filters"; our choice).

import { RuleDefinitionError } from './errors.js';
import type { Filter } from './filter.js';
import { getProperty, type FilterMessage, type SystemProperties } from './message.js';
import { compareValues, toFilterValue, type FilterValue, type PlainValue } from './values.js';

/**
 * The string fields of a correlation filter, in wire order (`enumerate-rules` list indexes 0–7, docs/filters.md,
 * "Correlation filters").
 */
export const CORRELATION_STRING_FIELDS = [
  'correlationId',
  'messageId',
  'to',
  'replyTo',
  'label',
  'sessionId',
  'replyToSessionId',
  'contentType',
] as const satisfies readonly (keyof SystemProperties)[];

/** A correlation field name (also the matching SystemProperties key). */
export type CorrelationField = (typeof CORRELATION_STRING_FIELDS)[number];

/**
 * Correlation filter input; absent or null fields are ignored (topic filters doc). `subject` is an alias of `label`.
 */
export type CorrelationFields = { readonly [K in CorrelationField]?: string | null } & {
  readonly subject?: string | null;
  /** Application properties; plain values are typed by `toFilterValue`. */
  readonly properties?: Readonly<Record<string, PlainValue>> | ReadonlyMap<string, FilterValue> | null;
};

/** A compiled correlation filter with its normalised fields (original property-name spelling kept). */
export interface CorrelationFilter extends Filter {
  readonly kind: 'correlation';
  readonly fields: { readonly [K in CorrelationField]: string | null };
  readonly properties: ReadonlyMap<string, FilterValue>;
}

/**
 * Compiles a correlation filter; throws RuleDefinitionError when no field is set (docs/filters.md, "Correlation
 * filters", request-response doc "at least one").
 */
export function compileCorrelationFilter(input: CorrelationFields): CorrelationFilter {
  const fields = {} as { [K in CorrelationField]: string | null };
  for (const f of CORRELATION_STRING_FIELDS) {
    const v = f === 'label' ? (input.label ?? input.subject) : input[f];
    fields[f] = v ?? null;
  }
  const properties = new Map<string, FilterValue>();
  const src = input.properties ?? {};
  const entries = src instanceof Map ? src.entries() : Object.entries(src as Record<string, PlainValue>);
  for (const [k, v] of entries) properties.set(k, toFilterValue(v as PlainValue));
  const set = CORRELATION_STRING_FIELDS.filter((f) => fields[f] !== null);
  if (set.length === 0 && properties.size === 0) {
    throw new RuleDefinitionError(
      'InvalidArgument',
      'A correlation filter must set at least one system or application property.',
    );
  }
  const evaluate = (msg: FilterMessage): boolean => {
    for (const f of set) {
      // A missing or null message value never equals a set field (docs/filters.md, "Correlation filters"; inferred).
      if (msg.system[f] !== fields[f]) return false;
    }
    for (const [name, want] of properties) {
      const have = getProperty(msg.properties, name);
      if (have === undefined || compareValues('=', have, want) !== true) return false;
    }
    return true;
  };
  return Object.freeze({ kind: 'correlation' as const, fields: Object.freeze(fields), properties, evaluate });
}
