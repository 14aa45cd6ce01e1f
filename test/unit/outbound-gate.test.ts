// The per-connection outgoing budget (src/amqp/output.ts): what a connection holds counts the deliveries being
// committed, those handed to rhea, and the socket's unsent buffer; at the mark links are refused and woken on drain.

import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { batchWrites, OutboundGate } from '../../src/amqp/output.js';

/** A socket whose unsent buffer the test sets by hand. */
class FakeSocket extends EventEmitter {
  writableLength = 0;
  writableNeedDrain = false;
  destroyed = false;
}

const HW = 1000;

/** A gate whose socket's unsent buffer is already past the mark and waiting for drain. */
function fullGate(): { socket: FakeSocket; gate: OutboundGate } {
  const socket = new FakeSocket();
  const gate = new OutboundGate(socket as never, { peakConnectionBytes: 0 }, HW);
  socket.writableLength = 5000;
  socket.writableNeedDrain = true;
  return { socket, gate };
}

describe('outbound gate', () => {
  it('counts committing, handed and unsent bytes, and refuses at the high-water mark', () => {
    const socket = new FakeSocket();
    const stats = { peakConnectionBytes: 0 };
    const gate = new OutboundGate(socket as never, stats, HW);
    const wake = (): void => undefined;
    gate.reserve(400);
    gate.handedOver(300);
    socket.writableLength = 200;
    expect(gate.buffered()).toBe(900);
    expect(gate.open(wake)).toBe(true);
    // rhea wrote the handed bytes: they now count as the socket's, not twice.
    gate.written(300);
    socket.writableLength = 500;
    expect(gate.buffered()).toBe(900);
    gate.reserve(200);
    expect(gate.open(wake)).toBe(false);
    expect(stats.peakConnectionBytes).toBe(1100);
    // A landed delivery leaves the committing count.
    gate.reserve(-200);
    expect(gate.buffered()).toBe(900);
    expect(gate.open(wake)).toBe(true);
  });

  it('wakes every refused link once the socket drains below the mark, and not before', () => {
    const { socket, gate } = fullGate();
    let woken = 0;
    const a = (): void => void woken++;
    const b = (): void => void woken++;
    expect(gate.open(a)).toBe(false);
    expect(gate.open(b)).toBe(false);
    expect(socket.listenerCount('drain')).toBe(1);
    expect(woken).toBe(0);
    socket.writableLength = 0;
    socket.writableNeedDrain = false;
    socket.emit('drain');
    expect(woken).toBe(2);
    expect(gate.open(a)).toBe(true);
  });

  it('does not wake a link that has gone', () => {
    const { socket, gate } = fullGate();
    let woken = 0;
    const a = (): void => void woken++;
    gate.open(a);
    gate.forget(a);
    socket.writableLength = 0;
    socket.emit('drain');
    expect(woken).toBe(0);
  });

  it('sees every write of a batched socket, so bytes rhea wrote are no longer counted as handed', async () => {
    const socket = new PassThrough();
    const gate = new OutboundGate(socket, { peakConnectionBytes: 0 }, HW);
    batchWrites(socket, gate);
    gate.handedOver(600);
    socket.write(Buffer.alloc(600));
    // Corked for the turn: the bytes sit in the stream's buffer, counted once.
    expect(gate.buffered()).toBe(600);
    await new Promise((r) => setImmediate(r));
    socket.resume();
    await new Promise((r) => setImmediate(r));
    expect(gate.buffered()).toBe(0);
  });
});
