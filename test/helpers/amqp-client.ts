// A small promise-based rhea client for fault and load tests (independent of the broker's code paths).

import rhea from 'rhea';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Opens a connection to 127.0.0.1:port. */
export function connect(port: number): Promise<Any> {
  const c = rhea.create_container({ id: `client-${Math.random().toString(36).slice(2)}` });
  return new Promise((resolve, reject) => {
    const conn = c.connect({ host: '127.0.0.1', port, reconnect: false, username: 'RootManageSharedAccessKey', password: 'SAS_KEY_VALUE', idle_time_out: 0 } as Any);
    conn.once('connection_open', () => resolve(conn));
    conn.once('disconnected', (ctx: Any) => reject(ctx.error ?? new Error('disconnected')));
  });
}

/** Outcome of one send: ok (accepted), fail (rejected/released) or info (unknown: connection lost). */
export type SendOutcome = 'ok' | 'fail' | 'info';

/**
 * Sends `ids.length` messages with at most `inFlight` unsettled; resolves with each id's outcome.
 * Stops early (the rest stay unrecorded) if the connection drops.
 */
export function sendMany(conn: Any, address: string, ids: string[], inFlight: number, body: Buffer): Promise<Map<string, SendOutcome>> {
  const outcomes = new Map<string, SendOutcome>();
  const sender = conn.open_sender({ target: { address } });
  let next = 0;
  let unsettled = 0;
  return new Promise((resolve) => {
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      for (const [id, o] of pending) if (!outcomes.has(id)) outcomes.set(id, o);
      resolve(outcomes);
    };
    const pending = new Map<string, SendOutcome>();
    const pump = (): void => {
      while (next < ids.length && unsettled < inFlight && sender.sendable()) {
        const id = ids[next++]!;
        const d = sender.send({ message_id: id, body: rhea.message.data_section(body) });
        d.peeklockId = id;
        pending.set(id, 'info');
        unsettled++;
      }
      if (next >= ids.length && unsettled === 0) finish();
    };
    const settle = (ctx: Any, o: SendOutcome): void => {
      const id = ctx.delivery.peeklockId as string;
      pending.delete(id);
      outcomes.set(id, o);
      unsettled--;
      pump();
    };
    sender.on('sendable', pump);
    sender.on('accepted', (ctx: Any) => settle(ctx, 'ok'));
    sender.on('rejected', (ctx: Any) => settle(ctx, 'fail'));
    sender.on('released', (ctx: Any) => settle(ctx, 'fail'));
    conn.on('disconnected', finish);
    conn.on('connection_close', finish);
  });
}

/** Receives and completes everything on `address` until it stays empty for `idleMs`; returns message ids in order. */
export function drain(conn: Any, address: string, idleMs = 500, credit = 200): Promise<{ id: string; body: Buffer; deliveryCount: number }[]> {
  const got: { id: string; body: Buffer; deliveryCount: number }[] = [];
  const receiver = conn.open_receiver({ source: { address }, credit_window: credit, autoaccept: true, rcv_settle_mode: 0 });
  return new Promise((resolve) => {
    let timer = setTimeout(() => finish(), idleMs * 4);
    const finish = (): void => {
      receiver.close();
      resolve(got);
    };
    receiver.on('message', (ctx: Any) => {
      const body = ctx.message.body;
      got.push({
        id: String(ctx.message.message_id),
        body: Buffer.isBuffer(body?.content) ? body.content : Buffer.from(String(body)),
        deliveryCount: ctx.message.delivery_count ?? 0,
      });
      clearTimeout(timer);
      timer = setTimeout(finish, idleMs);
    });
  });
}
