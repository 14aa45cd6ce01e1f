// An aborted delivery (AMQP 1.0 §2.7.5, transfer `aborted`): "Aborted messages should be discarded by the
// recipient (any payload within the frame carrying the performative MUST be ignored). An aborted message is
// implicitly settled", and `aborted` takes precedence over `more`. A client sends a multi-frame message of normal
// size and aborts it at its first, a middle and its last frame, from an unsettled sender, a pre-settled one and
// inside a transaction: nothing of it is stored or staged, no disposition answers it, the link goes on (the next
// message is stored), and the broker's credit counts it as one delivery and gives the credit back.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CREDIT_WINDOW } from '../../src/amqp/admission.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { size } from '../helpers/fault.js';
import { RawConn, frame, loginPrefix } from '../helpers/raw-amqp.js';
import { attach, control, described, descriptor, rhea, t, terminus, until } from '../helpers/raw-txn.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let broker: TestBroker;
let raw: RawConn;
beforeEach(async () => {
  broker = await startTestBroker([{ Name: 'q' }], { store: new MemoryStore() });
  raw = new RawConn(broker.port);
  await raw.ready();
});
afterEach(async () => {
  raw?.destroy();
  await broker?.dispose();
});

const SENDER = 1;
/** Rounds of up to 600 aborted deliveries in the credit test: 1,800, or 12,000 at the long size. */
const ROUNDS = size(3, 20);
/** A message of three frames' worth (about 3 KiB), sent in frames of at most this many bytes. */
const FRAME = 1_100;
const BIG = rhea.message.encode({ message_id: 'aborted', body: rhea.message.data_section(Buffer.alloc(3_000, 7)) }) as Buffer;
const chunks = [0, 1, 2].map((i) => BIG.subarray(i * FRAME, Math.min(BIG.length, (i + 1) * FRAME)));

/** How the test's sender settles: unsettled (the broker answers), pre-settled, or inside a transaction. */
type Mode = 'unsettled' | 'settled' | 'transaction';

/** A session's delivery ids, counted by the test as the client (one session, channel 0). */
let nextId = 0;

/** The broker's settled answers (role receiver) to our deliveries `id`. */
const answers = (id: number): Any[] =>
  raw.seen.filter((s) => s.name.includes('disposition') && s.fields.role === true && s.fields.first <= id && (s.fields.last ?? s.fields.first) >= id);

/** The broker's latest flow for our sender link (its credit for us), found by the handle of its attach. */
const lastFlow = (): Any => {
  const handle = raw.seen.find((s) => s.name.includes('attach') && s.fields.name === 'sender')?.fields.handle;
  return raw.seen.filter((s) => s.name.includes('flow') && handle !== undefined && s.fields.handle === handle).at(-1)?.fields;
};

/** How the broker ended the link or connection (the error of its detach or close, or the socket's close), if it did. */
function ending(): string | undefined {
  const end = raw.seen.find((s) => s.name.includes('detach') || s.name.includes('close'));
  if (end) return `${end.name}: ${end.fields.error?.condition} ${end.fields.error?.description}`;
  return raw.closed ? 'socket closed' : undefined;
}

/** Logs in, attaches the sender (and the coordinator with a declared transaction in that mode); returns its state. */
async function start(mode: Mode): Promise<Any> {
  nextId = 0;
  await raw.write(loginPrefix());
  let txn: Buffer | undefined;
  if (mode === 'transaction') {
    await raw.write(attach(0, false, terminus.source({ address: 'ctl' }).described(), described(0x30, [t.wrap_array(['amqp:local-transactions'], 0xa3)])));
    await raw.write(frame(0, 'transfer', { handle: 0, delivery_id: nextId, delivery_tag: Buffer.from([nextId++]), message_format: 0, settled: false }, control(0x31, [])));
    const declared = await until(() => answers(0)[0], 'declared');
    txn = declared.fields.state.value[0].value as Buffer;
  }
  await raw.write(
    frame(0, 'attach', {
      name: 'sender',
      handle: SENDER,
      role: false,
      snd_settle_mode: mode === 'settled' ? 1 : 0,
      rcv_settle_mode: 0,
      source: terminus.source({ address: 'sender' }).described(),
      target: terminus.target({ address: 'q' }).described(),
      initial_delivery_count: 0,
    }),
  );
  await until(() => lastFlow(), 'credit for the sender');
  return txn ? described(0x34, [t.wrap_binary(txn)]) : undefined;
}

/** The first fields of a delivery's first transfer in `mode`. */
function first(id: number, mode: Mode, state: Any): Record<string, unknown> {
  const f: Record<string, unknown> = { handle: SENDER, delivery_id: id, delivery_tag: Buffer.from([0xa0, id]), message_format: 0 };
  f.settled = mode === 'settled';
  if (state) f.state = state;
  return f;
}

/**
 * The frames of the big message aborted at frame `at` (0 first, 1 middle, 2 last): the frames before it, then a
 * transfer marked aborted carrying frame `at`'s payload, which must be ignored. The middle one also says `more`.
 */
function aborted(at: number, mode: Mode, state: Any): { bytes: Buffer; id: number } {
  const id = nextId++;
  const parts: Buffer[] = [];
  for (let i = 0; i <= at; i++) {
    const fields = i === 0 ? first(id, mode, state) : { handle: SENDER };
    if (i < at) parts.push(frame(0, 'transfer', { ...fields, more: true }, chunks[i]));
    else parts.push(frame(0, 'transfer', { ...fields, more: at === 1, aborted: true }, chunks[i]));
  }
  return { bytes: Buffer.concat(parts), id };
}

/** One whole single-frame message with id `messageId`. */
function whole(messageId: string, mode: Mode, state: Any): { bytes: Buffer; id: number } {
  const id = nextId++;
  return { bytes: frame(0, 'transfer', first(id, mode, state), rhea.message.encode({ message_id: messageId, body: 'x' })), id };
}

/** The message ids the queue holds, in order. */
const stored = (): string[] => broker.broker.peek('q', 1, 100).map((m) => String(m.row.messageId));

describe('aborted deliveries', () => {
  for (const mode of ['unsettled', 'settled', 'transaction'] as const) {
    it(`discards a multi-frame message aborted at its first, middle and last frame (${mode} sender); the link goes on`, async () => {
      const state = await start(mode);
      const abortedIds: number[] = [];
      const wholeIds: number[] = [];
      for (const at of [0, 1, 2]) {
        const a = aborted(at, mode, state);
        const w = whole(`after-${at}`, mode, state);
        abortedIds.push(a.id);
        wholeIds.push(w.id);
        await raw.write(Buffer.concat([a.bytes, w.bytes]));
      }
      if (mode === 'settled') {
        await until(() => (stored().length >= 3 || raw.closed ? true : undefined), 'stored').catch(() => undefined);
      } else {
        await until(() => (wholeIds.every((id) => answers(id).length) || raw.closed ? true : undefined), 'answers').catch(() => undefined);
      }
      let committed: Any;
      if (mode === 'transaction') {
        // Staged, not stored, until the discharge commits it.
        expect(stored()).toEqual([]);
        const discharge = nextId++;
        await raw.write(frame(0, 'transfer', { handle: 0, delivery_id: discharge, delivery_tag: Buffer.from([discharge]), message_format: 0, settled: false }, control(0x32, [state.value[0], t.wrap_boolean(false)])));
        committed = await until(() => answers(discharge)[0], 'discharge').catch(() => undefined);
      }
      expect(ending()).toBeUndefined();
      if (mode === 'transaction') expect(descriptor(committed?.fields.state)).toBe(0x24);
      // Nothing of an aborted delivery is stored, nor answered (it settled itself).
      expect(stored()).toEqual(['after-0', 'after-1', 'after-2']);
      expect(broker.broker.peek('q', 1, 100).map((m) => Buffer.from(m.body).length)).not.toContain(BIG.length);
      for (const id of abortedIds) expect(answers(id)).toEqual([]);
      for (const id of wholeIds) {
        const answer = answers(id);
        if (mode === 'settled') expect(answer).toEqual([]);
        else {
          expect(answer).toHaveLength(1);
          const outcome = mode === 'transaction' ? answer[0].fields.state.value[1] : answer[0].fields.state;
          expect(descriptor(outcome)).toBe(0x24); // accepted
        }
      }
    });
  }

  it('counts each aborted delivery against the credit and gives the credit back', async () => {
    await start('unsettled');
    // More aborted deliveries than the window holds, in rounds that stay within the credit granted so far.
    let sent = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const granted = lastFlow();
      const credit = granted.delivery_count + granted.link_credit - sent;
      const n = Math.min(credit, 600);
      expect(n).toBeGreaterThan(0);
      const frames: Buffer[] = [];
      for (let i = 0; i < n; i++) frames.push(aborted(i % 3, 'unsettled', undefined).bytes);
      await raw.write(Buffer.concat(frames));
      sent += n;
      // The broker counts each as one delivery (its delivery-count never passes ours) and tops the credit back
      // up to its window, a quarter window at a time (admission.ts): the sender has at least 3/4 of it again.
      const available = (): number => lastFlow().delivery_count + lastFlow().link_credit - sent;
      await until(() => (available() >= (CREDIT_WINDOW * 3) / 4 ? true : undefined), `credit after ${sent} aborted deliveries`).catch(() => undefined);
      expect(ending()).toBeUndefined();
      expect(lastFlow().delivery_count).toBeLessThanOrEqual(sent);
      expect(available()).toBeGreaterThanOrEqual((CREDIT_WINDOW * 3) / 4);
      expect(available()).toBeLessThanOrEqual(CREDIT_WINDOW);
    }
    const w = whole('after', 'unsettled', undefined);
    await raw.write(w.bytes);
    const answer = await until(() => answers(w.id)[0], 'the answer to the whole message').catch(() => undefined);
    expect(descriptor(answer?.fields.state)).toBe(0x24);
    expect(stored()).toEqual(['after']);
  });
});
