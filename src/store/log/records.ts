// The write-ahead log's record format (docs/durability.md, "The write-ahead log"). One record is one Store.write:
//
//   len u32 LE | crc32 u32 LE | lsn f64 LE | payload (len bytes: msgpack of the write's StoreOp[])
//
// The CRC covers the LSN and the payload, so a record is valid only if every byte of it reached the disk. LSNs are
// consecutive from 1 (an f64 holds them exactly up to 2^53). A segment is pre-written with zeros, so its unused tail
// reads as len 0, which no record has (an encoded op list is never empty bytes): the scan stops there.

import zlib from 'node:zlib';
import { Packr } from 'msgpackr';
import type { StoreOp } from '../store.js';

/** Bytes before a record's payload: length, checksum, LSN. */
export const HEADER_BYTES = 16;

/** The largest payload a record may declare; anything above is a torn or foreign length, never a real write. */
export const MAX_PAYLOAD = 1024 * 1024 * 1024;

// Plain msgpack maps (no record extension): a record must decode alone, without structures learned from others.
const packr = new Packr({ useRecords: false });

/** One decoded record: its LSN and the write's operations. */
export interface LogRecord {
  lsn: number;
  ops: StoreOp[];
}

/** Encodes one write as a record with LSN `lsn`. Throws (before anything is written) if an op cannot be encoded. */
export function encodeRecord(lsn: number, ops: StoreOp[]): Buffer {
  const payload = packr.pack(ops);
  const rec = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  rec.writeUInt32LE(payload.length, 0);
  rec.writeDoubleLE(lsn, 8);
  payload.copy(rec, HEADER_BYTES);
  rec.writeUInt32LE(zlib.crc32(rec.subarray(8)), 4);
  return rec;
}

/** Why a scan stopped: the end of the written part (zeros or the end of the buffer), or a record that failed a check. */
export type ScanEnd = 'end' | 'torn' | 'crc' | 'lsn';

/**
 * Reads the valid records of `buf` in order, from offset 0, and says where and why it stopped. A record counts only
 * if its length fits, its checksum matches and its LSN is one more than the previous record's (the first one's is
 * free: it is checked against the previous segment by the caller). Payloads are decoded lazily by `decodeRecord`.
 */
export function scanRecords(buf: Uint8Array): { records: { lsn: number; start: number; end: number }[]; stoppedAt: number; why: ScanEnd } {
  const view = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const records: { lsn: number; start: number; end: number }[] = [];
  let off = 0;
  let prev = -1;
  for (;;) {
    if (off + HEADER_BYTES > view.length) return { records, stoppedAt: off, why: 'end' };
    const len = view.readUInt32LE(off);
    if (len === 0 && view.readUInt32LE(off + 4) === 0) return { records, stoppedAt: off, why: 'end' };
    if (len > MAX_PAYLOAD || off + HEADER_BYTES + len > view.length) return { records, stoppedAt: off, why: 'torn' };
    const end = off + HEADER_BYTES + len;
    if (zlib.crc32(view.subarray(off + 8, end)) !== view.readUInt32LE(off + 4)) return { records, stoppedAt: off, why: 'crc' };
    const lsn = view.readDoubleLE(off + 8);
    if (!Number.isSafeInteger(lsn) || lsn < 1 || (prev >= 0 && lsn !== prev + 1)) return { records, stoppedAt: off, why: 'lsn' };
    records.push({ lsn, start: off, end });
    prev = lsn;
    off = end;
  }
}

/** Decodes the operations of a record found by `scanRecords` (byte arrays come back as copies). */
export function decodeRecord(buf: Uint8Array, start: number, end: number): StoreOp[] {
  const payload = Uint8Array.prototype.slice.call(buf, start + HEADER_BYTES, end);
  return packr.unpack(payload) as StoreOp[];
}
