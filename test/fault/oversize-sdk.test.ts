// Oversized sends with the real SDK and its default options against a child broker: a 2 MB and a 100 MB
// message are refused with MessageSizeExceeded within 2 s (not cut off by a detach the SDK waits 60 s on),
// the same sender then sends a normal message, and the broker reads the 100 MB transfer without holding it:
// its resident memory, sampled while the transfer streams in, stays far below the message size.

import { afterAll, describe, expect, it } from 'vitest';
import { ServiceBusClient } from '@azure/service-bus';
import { codeOf } from '../helpers/sdk.js';
import { emit, rssMB, sharedChild } from '../helpers/fault.js';

const child = sharedChild([{ Name: 'q' }]);
let client: ServiceBusClient | undefined;

afterAll(async () => client?.close());

describe('oversized sends with the SDK', () => {
  it('refuses 2 MB and 100 MB messages with MessageSizeExceeded in under 2 s; the sender and the broker carry on', async () => {
    const broker = child.broker;
    client = new ServiceBusClient(
      `Endpoint=sb://127.0.0.1:${broker.port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
    );
    const sender = client.createSender('q');
    await sender.sendMessages({ body: 'warm-up' });
    const figures: Record<string, unknown> = { test: 'oversize-sdk' };

    for (const mb of [2, 100]) {
      const body = Buffer.alloc(mb * 1024 * 1024, 7);
      const rssBefore = rssMB(broker.proc.pid);
      let rssMax = rssBefore;
      const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMB(broker.proc.pid))), 20);
      const t0 = performance.now();
      const err = await sender.sendMessages({ body }).then(
        () => null,
        (e: unknown) => e,
      );
      const ms = Math.round(performance.now() - t0);
      clearInterval(sampler);
      // The link and the connection stay usable: the next send on the same sender is stored.
      await sender.sendMessages({ body: `after-${mb}` });
      figures[`${mb}MB`] = { code: codeOf(err), ms, rssBeforeMB: rssBefore, rssMaxMB: rssMax, rssGrowthMB: Math.round((rssMax - rssBefore) * 10) / 10 };
      expect(codeOf(err)).toBe('MessageSizeExceeded');
      expect((err as Error).message).toMatch(/exceeds the limit \(262144 bytes\)/);
      // The size named is the whole message's, though most of it was never kept.
      const named = Number(/size (\d+) bytes/.exec((err as Error).message)?.[1]);
      expect(named).toBeGreaterThan(body.length);
      expect(named).toBeLessThan(body.length + 100);
      expect(ms).toBeLessThan(2_000);
      // Not held: a broker that buffered the message would grow by at least its size.
      if (mb === 100) expect(rssMax - rssBefore).toBeLessThan(50);
    }

    const receiver = client.createReceiver('q', { receiveMode: 'receiveAndDelete' });
    const got = await receiver.receiveMessages(10, { maxWaitTimeInMs: 2_000 });
    emit(figures);
    expect(got.map((m) => m.body)).toEqual(['warm-up', 'after-2', 'after-100']);
    expect(broker.proc.exitCode).toBeNull();
  }, 60_000);
});
