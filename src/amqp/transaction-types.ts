// The wire types of AMQP transactions (AMQP 1.0 part 4, as Service Bus speaks it; docs/wire-contract.md,
// "Transactions"): the `coordinator` terminus, `declare` / `declared` / `discharge`, and `transactional-state` on a
// transfer or a disposition; and the send-via attach property (`com.microsoft:transfer-destination-address`).
// rhea knows none of these types: the coordinator terminus and the two states are registered with it here, and
// control messages are read from their bytes (rhea drops an amqp-value's descriptor). The coordinator endpoint
// (coordinator.ts) and the entity links use them.

import rhea, { rheaInternalModule } from './rhea.js';
import { BrokerError } from '../broker/errors.js';
import { toAmqpError } from './conditions.js';
import { skipValue, splitSections, types, type Typed } from './sections.js';
import { RAW, type RheaContext, type RheaDelivery, type RheaReceiver } from './rhea-types.js';

const COORDINATOR = 0x30;
const DECLARE = 0x31;
const DISCHARGE = 0x32;
const DECLARED = 0x33;
const TRANSACTIONAL_STATE = 0x34;
const AMQP_VALUE = 0x77;
/** The attach property that makes a sender link a send-via link (Service Bus protocol guide, "Send-via"). */
export const TRANSFER_DESTINATION = 'com.microsoft:transfer-destination-address';
/** The event rhea raises for a disposition carrying transactional-state (see installTransactionTypes). */
export const TRANSACTIONAL_EVENT = 'transactional_state';

let installed = false;

/** A transactional-state as rhea hands it to the broker: the txn-id and the outcome inside, unwrapped. */
export interface TransactionalState {
  txnId: Buffer;
  outcome?: Record<string, unknown> & { constructor?: { composite_type?: string } };
}

/**
 * Teaches the broker's rhea the coordinator terminus (else an attach to it reads as a null target) and the
 * transactional-state outcome (else rhea logs "unrecognised outcome" and raises no event). Once per process.
 */
export function installTransactionTypes(): void {
  if (installed) return;
  installed = true;
  const terminus = rheaInternalModule<{ unwrap(f: Typed | undefined): unknown }>('terminus');
  const unwrapTerminus = terminus.unwrap.bind(terminus);
  terminus.unwrap = (field) => (descriptorOf(field) === COORDINATOR ? new Coordinator(field!) : unwrapTerminus(field));
  const message = rhea.message as unknown as { unwrap_outcome(o: Typed): unknown };
  const unwrapOutcome = message.unwrap_outcome.bind(message);
  message.unwrap_outcome = (o) => {
    if (descriptorOf(o) !== TRANSACTIONAL_STATE) return unwrapOutcome(o);
    const [id, outcome] = (o.value as Typed[]) ?? [];
    return new TxnState(Buffer.from((id?.value as Buffer) ?? []), outcome?.descriptor ? (unwrapOutcome(outcome) as TransactionalState['outcome']) : undefined);
  };
  // A transfer's state reaches the delivery unwrapped, its descriptor gone; read it from the frame's raw field.
  type Transfer = { performative: { value: Typed[]; state?: unknown } };
  const Session = rheaInternalModule<{ prototype: { on_transfer(this: unknown, f: Transfer): void } }>('session');
  const onTransfer = Session.prototype.on_transfer;
  Session.prototype.on_transfer = function (this: unknown, frame: Transfer) {
    const raw = frame.performative?.value?.[TRANSFER_STATE_FIELD];
    if (descriptorOf(raw) === TRANSACTIONAL_STATE) {
      const [id] = (raw!.value as Typed[]) ?? [];
      Object.defineProperty(frame.performative, 'state', { value: new TxnState(Buffer.from((id?.value as Buffer) ?? [])) });
    }
    return onTransfer.call(this, frame);
  };
  // A flow carrying a txn-id asks for transactional acquisition (a receive inside a transaction), which Service
  // Bus does not offer: receives are not transactional. The link is detached with the reason, and no credit counts.
  type Flow = { performative: { properties?: Record<string, unknown> } };
  type SenderLink = { close(e: unknown): void };
  const { Sender } = rheaInternalModule<{ Sender: { prototype: { on_flow(this: SenderLink, f: Flow): void } } }>('link');
  const onFlow = Sender.prototype.on_flow;
  Sender.prototype.on_flow = function (this: SenderLink, frame: Flow) {
    if (frame.performative?.properties?.['txn-id'] === undefined) return onFlow.call(this, frame);
    this.close(toAmqpError(RECEIVE_IN_TRANSACTION));
  };
}

/** Service Bus refuses receives inside a transaction: a message is received under its lock, then settled in one. */
export const RECEIVE_IN_TRANSACTION = new BrokerError(
  'InvalidOperation',
  'Receive operations are not allowed in a transaction; receive the message first, then settle it in the transaction.',
);

/** The index of `state` in a transfer performative's fields. */
const TRANSFER_STATE_FIELD = 7;

/** The coordinator target as rhea hands it over (remote.attach.target). */
class Coordinator {
  readonly capabilities: string[];
  constructor(field: Typed) {
    const [caps] = (field.value as Typed[]) ?? [];
    const list = caps?.value;
    this.capabilities = (Array.isArray(list) ? list : list === undefined ? [] : [caps]).map((c: Typed | string) =>
      String(typeof c === 'object' && c !== null ? c.value : c),
    );
  }
}

// rhea dispatches an outcome by its constructor's composite_type.
class TxnState implements TransactionalState {
  static composite_type = TRANSACTIONAL_EVENT;
  constructor(
    readonly txnId: Buffer,
    readonly outcome?: TransactionalState['outcome'],
  ) {}
}

function descriptorOf(t: Typed | undefined): number | undefined {
  const d = t?.descriptor?.value;
  if (typeof d === 'number') return d;
  if (typeof d === 'bigint') return Number(d);
  if (d === 'amqp:coordinator:list') return COORDINATOR;
  if (d === 'amqp:transactional-state:list') return TRANSACTIONAL_STATE;
  if (d === 'amqp:declare:list') return DECLARE;
  if (d === 'amqp:discharge:list') return DISCHARGE;
  return undefined;
}

/** True when a client's attach targets the transaction coordinator. */
export function isCoordinator(receiver: RheaReceiver): boolean {
  return receiver.remote.attach.target instanceof Coordinator;
}

/** The txn-id (hex) of an incoming transfer's transactional-state, or undefined for plain work. */
export function transferTxn(delivery: RheaDelivery | undefined): string | undefined {
  const state = (delivery as { remote_state?: unknown } | undefined)?.remote_state;
  return state instanceof TxnState ? state.txnId.toString('hex') : undefined;
}

/** `transactional-state(txn-id, outcome)`, the answer to transactional work. */
export function transactionalState(txnHex: string, outcome: unknown): unknown {
  const fields = [types.wrap_binary(Buffer.from(txnHex, 'hex'))];
  if (outcome !== undefined) fields.push(outcome as Typed);
  return types.described(types.wrap_ulong(TRANSACTIONAL_STATE), types.wrap_list(fields));
}

/** A control message on a coordinator link, read from its transfer: a declare, a discharge, or neither. */
export type ControlMessage = { kind: 'declare' } | { kind: 'discharge'; txn: string; fail: boolean } | undefined;

/** Reads the control message of a coordinator link's transfer; undefined when it is neither declare nor discharge. */
export function readControl(ctx: RheaContext): ControlMessage {
  let body: Typed | undefined;
  try {
    body = controlBody(ctx);
  } catch {
    body = undefined;
  }
  const code = descriptorOf(body);
  if (code === DECLARE) return { kind: 'declare' };
  if (code !== DISCHARGE) return undefined;
  const [id, fail] = (body!.value as Typed[]) ?? [];
  return { kind: 'discharge', txn: Buffer.from((id?.value as Buffer) ?? []).toString('hex'), fail: fail?.value === true };
}

/** `declared(txn-id)`, the answer to a declare. */
export function declared(txnHex: string): unknown {
  return types.described(types.wrap_ulong(DECLARED), types.wrap_list([types.wrap_binary(Buffer.from(txnHex, 'hex'))]));
}

/** The coordinator target of an attach reply: a coordinator offering local transactions. */
export function coordinatorTarget(): unknown {
  return types.described(types.wrap_ulong(COORDINATOR), types.wrap_list([types.wrap_array(['amqp:local-transactions'], 0xa3)]));
}

// The body of a control message: the described value inside the amqp-value section, read from the transfer's
// bytes. rhea's reader keeps only the outer of two nested descriptors, so the inner one is read here.
function controlBody(ctx: RheaContext): Typed | undefined {
  const raw = (ctx.message as { [RAW]?: Buffer } | undefined)?.[RAW] ?? (Buffer.isBuffer(ctx.message) ? ctx.message : undefined);
  if (!raw) return undefined;
  const section = splitSections(raw).find((s) => s.code === AMQP_VALUE);
  if (!section) return undefined;
  const valueAt = skipValue(raw, section.start + 1);
  if (raw[valueAt] !== 0x00) return undefined;
  const listAt = skipValue(raw, valueAt + 1);
  const descriptor = new types.Reader(raw.subarray(valueAt + 1, listAt)).read();
  const list = new types.Reader(raw.subarray(listAt, section.end)).read();
  return { value: list.value, descriptor: { value: descriptor.value } };
}

/** A send-via refused at attach: the destination must be named by a non-empty string. */
export function badDestination(): BrokerError {
  return new BrokerError('InvalidOperation', `The attach property '${TRANSFER_DESTINATION}' must name the destination entity.`);
}
