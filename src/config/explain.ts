// Turning problems in a config file into one line each: the JSON path in Service Bus's Config.json spelling
// (`UserConfig.Namespaces[0].Queues[1].Properties.LockDuration`), the value, and what is allowed. The schema's
// errors are located in the file so they can be reported in the order a reader meets them.

import jsonc from 'jsonc-parser';
import type { Node as JsonNode, ParseErrorCode } from 'jsonc-parser';
import type { ErrorObject } from 'ajv';
import { ConfigError, suggestKey } from './errors.js';

/** One step of a JSON path: a key or an index. */
export type Segment = string | number;

/** Renders path segments as `UserConfig.Namespaces[0].Queues[1].Properties.LockDuration`. */
export function formatPath(segments: readonly Segment[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(s)) out += out === '' ? s : `.${s}`;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out === '' ? '(root)' : out;
}

/** JSON.stringify's a value for a message, shortening long objects and strings. */
export function showValue(value: unknown): string {
  const s = JSON.stringify(value) ?? String(value);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** Throws a ConfigError naming the path, the value and the rule it breaks. */
export function fail(path: string, value: unknown, rule: string): never {
  throw new ConfigError(`${path} = ${showValue(value)}: ${rule}`);
}

// ---- JSON + schema stage ------------------------------------------------------------------------

/** Turns a jsonc-parser error code name such as "CommaExpected" into "comma expected". */
export function describeParseError(code: ParseErrorCode): string {
  return jsonc
    .printParseErrorCode(code)
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase();
}

/** Converts an ajv instancePath ("/UserConfig/Namespaces/0") into segments, using the data to tell indexes from keys. */
function toSegments(instancePath: string, data: unknown): Segment[] {
  if (instancePath === '') return [];
  const out: Segment[] = [];
  let cur: unknown = data;
  for (const raw of instancePath.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) {
      out.push(Number(key));
      cur = cur[Number(key)];
    } else {
      out.push(key);
      cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[key] : undefined;
    }
  }
  return out;
}

/** A problem and where in the file it is (for ordering the report). */
export interface Located {
  offset: number;
  text: string;
}

/** An unknown key: where it is, its path, and a "did you mean" (or ""). */
export interface UnknownKey {
  offset: number;
  path: string;
  hint: string;
}

/** Maps ajv errors to located messages, one per place; unknown keys go to `unknown`, the rest are returned. */
export function explainSchemaErrors(errors: ErrorObject[], data: unknown, root: JsonNode, unknown: UnknownKey[]): Located[] {
  const problems: Located[] = [];
  const offsetOf = (segs: Segment[]): number => jsonc.findNodeAtLocation(root, segs)?.offset ?? Number.MAX_SAFE_INTEGER;
  // With allErrors ajv can report one bad value under several keywords (type, then enum); the first says it.
  const seen = new Set<string>();
  for (const e of errors) {
    const segs = toSegments(e.instancePath, data);
    if (e.keyword === 'additionalProperties') {
      const key = String((e.params as { additionalProperty: string }).additionalProperty);
      const allowed = Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      unknown.push({ offset: offsetOf([...segs, key]), path: formatPath([...segs, key]), hint: suggestKey(key, allowed) });
      continue;
    }
    const where = e.keyword === 'required' ? `${e.instancePath}/${String((e.params as { missingProperty: string }).missingProperty)}` : e.instancePath;
    if (seen.has(where)) continue;
    seen.add(where);
    if (e.keyword === 'required') {
      const key = String((e.params as { missingProperty: string }).missingProperty);
      problems.push({ offset: offsetOf(segs), text: `${formatPath([...segs, key])}: required` });
    } else {
      const description = (e.parentSchema as { description?: unknown } | undefined)?.description;
      const rule = typeof description === 'string' ? `must be ${description}` : (e.message ?? 'invalid');
      problems.push({ offset: offsetOf(segs), text: `${formatPath(segs)} = ${showValue(e.data)}: ${rule}` });
    }
  }
  return problems;
}
