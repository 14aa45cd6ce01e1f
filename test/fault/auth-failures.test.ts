// Authentication failures against a child broker logging at debug: wrong key, expired
// token, wrong audience, missing rights, wrong SASL PLAIN password, and a connection that never sets a token
// (closed after Broker.AuthTimeout, 2 s here; Service Bus uses 20 s: amqp:unauthorized-access, or
// amqp:connection:forced when it holds a $cbs link). No signature or key in any log line.

import { describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { ServiceBusClient } from '@azure/service-bus';
import { emit, sharedChild, until } from '../helpers/fault.js';
import { RawConn, attachReceiver, frame, frames, header, saslPlain } from '../helpers/raw-amqp.js';

const POLICIES = [
  { Name: 'RootManageSharedAccessKey', Key: 'SAS_KEY_VALUE', Rights: ['Manage', 'Send', 'Listen'] },
  { Name: 'listen-only', Key: 'listen-key-secret', Rights: ['Listen'] },
];
const child = sharedChild([{ Name: 'q' }, { Name: 'other' }], { LogLevel: 'debug', AuthTimeout: 'PT2S', SharedAccessPolicies: POLICIES });

function token(resource: string, name: string, key: string, expirySec: number): string {
  const sr = encodeURIComponent(resource);
  const sig = encodeURIComponent(createHmac('sha256', key).update(`${sr}\n${expirySec}`).digest('base64'));
  return `SharedAccessSignature sr=${sr}&sig=${sig}&se=${expirySec}&skn=${encodeURIComponent(name)}`;
}

const fast = { retryOptions: { maxRetries: 0, timeoutInMs: 5_000 } };
const codeOf = (e: unknown): string | undefined => (e as { code?: string })?.code;

async function trySend(cs: string, entity = 'q'): Promise<string | undefined> {
  const client = new ServiceBusClient(cs, fast);
  try {
    await client.createSender(entity).sendMessages({ body: 'x' });
    return 'ok';
  } catch (err) {
    return codeOf(err);
  } finally {
    await client.close();
  }
}

describe('authentication failures', () => {
  it('refuses every bad credential, closes idle unauthenticated connections, and logs no secrets', async () => {
    const broker = child.broker;
    const ep = `Endpoint=sb://127.0.0.1:${broker.port};UseDevelopmentEmulator=true`;
    const now = Math.floor(Date.now() / 1000);
    const res = `sb://127.0.0.1:${broker.port}/q`;
    const cases: Record<string, { got: string | undefined; want: string }> = {
      badSignature: { got: await trySend(`${ep};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=wrong-key`), want: 'UnauthorizedAccess' },
      expired: { got: await trySend(`${ep};SharedAccessSignature=${token(res, 'RootManageSharedAccessKey', 'SAS_KEY_VALUE', now - 60)}`), want: 'UnauthorizedAccess' },
      wrongAudience: { got: await trySend(`${ep};SharedAccessSignature=${token(`sb://127.0.0.1:${broker.port}/other`, 'RootManageSharedAccessKey', 'SAS_KEY_VALUE', now + 600)}`), want: 'UnauthorizedAccess' },
      unknownPolicy: { got: await trySend(`${ep};SharedAccessKeyName=nobody;SharedAccessKey=SAS_KEY_VALUE`), want: 'UnauthorizedAccess' },
      missingRights: { got: await trySend(`${ep};SharedAccessKeyName=listen-only;SharedAccessKey=listen-key-secret`), want: 'UnauthorizedAccess' },
      valid: { got: await trySend(`${ep};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE`), want: 'ok' },
    };

    // SASL PLAIN with a wrong password: the SASL outcome is "auth" (code 1) and the socket closes.
    const plain = new RawConn(broker.port);
    await plain.ready();
    await plain.write(Buffer.concat([header(3), saslPlain('RootManageSharedAccessKey', 'wrong-password')]));
    await until(() => !!plain.find('sasl_outcome'), 5_000);
    const plainCode = plain.find('sasl_outcome')?.fields.code;
    plain.destroy();

    // ANONYMOUS, open, and no put-token: closed with amqp:unauthorized-access after AuthTimeout.
    const idle = new RawConn(broker.port);
    await idle.ready();
    const anon = frames.write_frame(frames.sasl_frame(frames.sasl_init({ mechanism: 'ANONYMOUS' })));
    await idle.write(Buffer.concat([header(3), anon]));
    await until(() => !!idle.find('sasl_outcome'), 5_000);
    const t0 = Date.now();
    await idle.write(Buffer.concat([header(0), frame(0, 'open', { container_id: 'idle' })]));
    await until(() => idle.closed, 8_000);
    const idleClosedMs = Date.now() - t0;
    const idleCondition = idle.find('close')?.fields.error?.condition;
    idle.destroy();

    // The same, but holding a $cbs link as the SDK does between retries: closed with amqp:connection:forced,
    // the one condition rhea clients report as 'disconnected' (any other leaves the SDK's $cbs links stale).
    const cbs = new RawConn(broker.port);
    await cbs.ready();
    await cbs.write(Buffer.concat([header(3), anon]));
    await until(() => !!cbs.find('sasl_outcome'), 5_000);
    await cbs.write(Buffer.concat([header(0), frame(0, 'open', { container_id: 'cbs' }), frame(0, 'begin', { next_outgoing_id: 0, incoming_window: 2048, outgoing_window: 2048 }), attachReceiver(0, '$cbs')]));
    await until(() => cbs.closed, 8_000);
    const cbsCondition = cbs.find('close')?.fields.error?.condition;
    cbs.destroy();

    const secretLines = broker.output().split('\n').filter((l) => /sig=(?!\[redacted\])|SAS_KEY_VALUE|listen-key-secret|wrong-key|wrong-password/.test(l));
    const passed = Object.values(cases).filter((c) => c.got === c.want).length;
    emit({ test: 'auth-failures', runs: Object.keys(cases).length + 2, passed: passed + (plainCode === 1 ? 1 : 0) + (idleCondition === 'amqp:unauthorized-access' ? 1 : 0), cases: Object.fromEntries(Object.entries(cases).map(([k, v]) => [k, v.got])), plainCode, idleCondition, cbsCondition, idleClosedMs, secretLines: secretLines.length });
    for (const [name, c] of Object.entries(cases)) expect(`${name}: ${c.got}`).toBe(`${name}: ${c.want}`);
    expect(plainCode).toBe(1);
    expect(idleCondition).toBe('amqp:unauthorized-access');
    expect(cbsCondition).toBe('amqp:connection:forced');
    expect(idleClosedMs).toBeGreaterThanOrEqual(1_500);
    expect(idleClosedMs).toBeLessThan(4_000);
    expect(secretLines).toEqual([]);
  }, 60_000);
});
