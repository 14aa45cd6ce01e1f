// The `$management` rule operations of a subscription (docs/filters.md, "Rule operations"): add-rule, remove-rule,
// enumerate-rules. The JS SDK silently drops a rule whose encoding is off, so enumerate answers exactly as the service
// does: ulong descriptors, an action on every rule (empty-rule-action when none), and a map — never null — in the
// correlation filter's properties field.

import rhea from './rhea.js';
import type { MessagingPort } from '../broker/messaging-port.js';
import { BrokerError } from '../broker/errors.js';
import { RuleDefinitionError, type PlainValue, type RuleDescription, type RuleFilterDescription, type SqlParameters } from '../filters/index.js';
import type { ManagementReply } from './management-reply.js';
import { toAmqpError, toStatusCode } from './conditions.js';
import { intField } from './management-args.js';
import { MAX_RULES_PAGE } from '../broker/runtime/limits.js';

/** Largest AMQP int: what the SDKs send as enumerate-rules' top for "every rule". */
const INT32_MAX = 2_147_483_647;

type Typed = unknown;
const t = rhea.types as unknown as {
  described(d: Typed, v: Typed): Typed;
  wrap_ulong(n: number): Typed;
  wrap_list(l: Typed[]): Typed;
  wrap_string(s: string): Typed;
  wrap_int(n: number): Typed;
  wrap_timestamp(n: number): Typed;
  wrap(v: unknown): Typed;
};

/** Descriptor codes of the rule types (ulong), as the JS SDK's constants give them. */
const CODES = {
  ruleDescription: 0x0000013700000004,
  sqlFilter: 0x0000001370000006,
  trueFilter: 0x0000001370000007,
  falseFilter: 0x0000001370000008,
  correlationFilter: 0x0000001370000009,
  emptyAction: 0x0000013700000005,
  sqlAction: 0x0000013700000006,
};

/** Correlation filter wire keys, in list order, with the engine's field names. */
const CORRELATION_KEYS: [wire: string, field: string][] = [
  ['correlation-id', 'correlationId'],
  ['message-id', 'messageId'],
  ['to', 'to'],
  ['reply-to', 'replyTo'],
  ['label', 'label'],
  ['session-id', 'sessionId'],
  ['reply-to-session-id', 'replyToSessionId'],
  ['content-type', 'contentType'],
];

const described = (code: number, fields: Typed[]): Typed => t.described(t.wrap_ulong(code), t.wrap_list(fields));

function encodeFilter(f: RuleFilterDescription): Typed {
  switch (f.type) {
    case 'sql':
      return described(CODES.sqlFilter, [t.wrap_string(f.expression), t.wrap_int(20)]);
    case 'true':
      return described(CODES.trueFilter, []);
    case 'false':
      return described(CODES.falseFilter, []);
    case 'correlation': {
      const fields = f as unknown as Record<string, unknown>;
      const list = CORRELATION_KEYS.map(([, k]) => (typeof fields[k] === 'string' ? t.wrap_string(fields[k] as string) : t.wrap(null)));
      const props = (fields.properties ?? {}) as Record<string, unknown>;
      list.push(t.wrap(props instanceof Map ? Object.fromEntries(props) : { ...props }));
      return described(CODES.correlationFilter, list);
    }
  }
}

function encodeRule(r: RuleDescription): Typed {
  const action = r.action === null ? described(CODES.emptyAction, []) : described(CODES.sqlAction, [t.wrap_string(r.action), t.wrap_int(20)]);
  return described(CODES.ruleDescription, [encodeFilter(r.filter), action, t.wrap_string(r.name)]);
}

// The SDKs send no parameters over AMQP (they are a management-API feature), but a `parameters` map beside
// `expression` is taken as the rule's parameter values, so a hand-written client can bind `@name` too.
function parametersOf(v: unknown): SqlParameters | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw new RuleDefinitionError('InvalidArgument', "A rule's 'parameters' must be a map.");
  const entries = v instanceof Map ? [...(v as Map<unknown, unknown>).entries()] : Object.entries(v);
  const out: Record<string, PlainValue> = {};
  for (const [k, x] of entries) {
    const plain = typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean' || x instanceof Date || x === null;
    if (typeof k !== 'string' || !plain) throw new RuleDefinitionError('InvalidArgument', `The parameter '${String(k)}' must have a string, number, boolean or timestamp value.`);
    out[k] = x;
  }
  return Object.keys(out).length ? out : undefined;
}

// The SDKs send TrueRuleFilter and FalseRuleFilter as sql-filter with exactly these texts (.NET's subclass
// SqlRuleFilter; AmqpMessageConverter sends any SqlRuleFilter so), and Service Bus reads them back as the true and
// false filters (true-filter / false-filter descriptors), so these two texts name those kinds. Other spellings
// (`1 = 0`, `TRUE`) stay SQL filters, as sent (docs/filters.md, "TRUE and FALSE filters").
const BOOLEAN_FILTERS: Partial<Record<string, RuleFilterDescription>> = { '1=1': { type: 'true' }, '1=0': { type: 'false' } };

/** Decodes add-rule's `rule-description` map (string or symbol keys; unset correlation keys arrive as null). */
export function decodeRule(name: unknown, d: unknown): RuleDescription {
  if (typeof name !== 'string') throw new RuleDefinitionError('InvalidArgument', "The request needs a 'rule-name' string.");
  const desc = (d ?? {}) as Record<string, unknown>;
  const sql = desc['sql-filter'] as Record<string, unknown> | undefined | null;
  const corr = desc['correlation-filter'] as Record<string, unknown> | undefined | null;
  const act = desc['sql-rule-action'] as Record<string, unknown> | undefined | null;
  const action = act && typeof act.expression === 'string' && act.expression.trim() ? act.expression : null;
  const actionParameters = action === null ? undefined : parametersOf(act?.parameters);
  if (sql && corr) throw new RuleDefinitionError('InvalidArgument', 'A rule has exactly one filter.');
  if (sql) {
    if (typeof sql.expression !== 'string' || !sql.expression.trim()) {
      throw new RuleDefinitionError('InvalidArgument', 'The SQL filter expression must not be empty.');
    }
    const parameters = parametersOf(sql.parameters);
    const filter: RuleFilterDescription = parameters
      ? { type: 'sql', expression: sql.expression, parameters }
      : BOOLEAN_FILTERS[sql.expression] ?? { type: 'sql', expression: sql.expression };
    return actionParameters ? { name, filter, action, actionParameters } : { name, filter, action };
  }
  if (corr) {
    const filter: Record<string, unknown> = { type: 'correlation' };
    for (const [wire, field] of CORRELATION_KEYS) if (typeof corr[wire] === 'string') filter[field] = corr[wire];
    if (corr.properties && typeof corr.properties === 'object') filter.properties = corr.properties;
    const f = filter as unknown as RuleFilterDescription;
    return actionParameters ? { name, filter: f, action, actionParameters } : { name, filter: f, action };
  }
  throw new RuleDefinitionError('InvalidArgument', 'The rule description needs a sql-filter or a correlation-filter.');
}

/** Runs a rule operation; RuleDefinitionErrors become the replies the SDK maps (409, 404, 400). */
export async function ruleOperation(broker: MessagingPort, entity: string, op: string, body: Record<string, unknown>): Promise<ManagementReply> {
  try {
    if (op === 'com.microsoft:add-rule') {
      await broker.addRule(entity, decodeRule(body['rule-name'], body['rule-description']));
      return { statusCode: 200, statusDescription: 'OK' };
    }
    if (op === 'com.microsoft:remove-rule') {
      if (typeof body['rule-name'] !== 'string') throw new BrokerError('InvalidOperation', "The request needs a 'rule-name' string.");
      await broker.removeRule(entity, body['rule-name']);
      return { statusCode: 200, statusDescription: 'OK' };
    }
    const all = broker.listRules(entity);
    // The SDKs send top = 2^31 - 1 for "all" (and page on until an empty reply), so a top is never refused for its
    // size: it is served with at most MAX_RULES_PAGE rules, which bounds what one reply encodes. A top or skip that
    // is not a number is refused.
    const skip = intField(body, 'skip', { dflt: 0, min: 0, max: Number.MAX_SAFE_INTEGER, clamp: true });
    const top = Math.min(MAX_RULES_PAGE, intField(body, 'top', { dflt: INT32_MAX, min: 0, max: INT32_MAX, clamp: true }));
    const page = all.slice(skip, skip + top);
    if (!page.length) return { statusCode: 204, statusDescription: 'No rules' };
    return { statusCode: 200, statusDescription: 'OK', body: { rules: page.map((r) => ({ 'rule-description': encodeRule(r) })) } };
  } catch (err) {
    if (!(err instanceof RuleDefinitionError)) throw err;
    const { condition, description } = toAmqpError(err);
    return { statusCode: toStatusCode(err), statusDescription: description, errorCondition: condition };
  }
}
