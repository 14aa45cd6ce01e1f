// Microbenchmark (not a test): the broker CPU per incoming message on its entity-send path, from a transfer's bytes
// to the IncomingMessage (and, for a topic send, its filter view); docs/performance.md, "Parsing an incoming
// message". Quiet: one process, no I/O, CPU time (user + system) of 7 × 100,000 calls after a warm-up, median.
// Usage: npm run build && node test/bench/parse-incoming.mjs dist [--with-rhea-decode]
// --with-rhea-decode adds rhea's decode of the whole message, as rhea did for every transfer before issue 37's
// one-pass view (run it against that build, where parseIncoming took rhea's decoding as its second argument).
import { Buffer } from 'node:buffer';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const dist = path.resolve(process.argv[2]);
const mode = process.argv.includes('--with-rhea-decode') ? 'with rhea decode' : 'bytes only';
const imp = (p) => import(pathToFileURL(path.join(dist, p)).href);
const { default: rhea } = await imp('amqp/rhea.js');
const { patchRhea } = await imp('amqp/rhea-patches.js');
const codec = await imp('amqp/codec.js');
patchRhea();
const t = rhea.types;
const base = {
  durable: true,
  content_type: 'application/json',
  subject: 'OrderPlaced',
  correlation_id: 'c-0000000042',
  application_properties: {
    region: 'eu-west',
    customer: 'customer-00017',
    amount: t.wrap_long(125000),
    quantity: t.wrap_int(3),
    priority: 'high',
    express: true,
    ratio: 0.75,
    placedAt: t.wrap_timestamp(1_764_000_000_000),
  },
  body: rhea.message.data_section(Buffer.alloc(1024, 0x61)),
};
const withId = rhea.message.encode({ ...base, message_id: 'f3a1c2d4e5f60718293a4b5c6d7e8f90' });
const withoutId = rhea.message.encode(base);
// Before the one-pass view rhea decoded every format-0 transfer (session.js), then parseIncoming read its decoding.
// Now the entity sender's links skip rhea's decode, and parseIncoming gets the bytes only.
const parse = mode === 'with rhea decode'
  ? (raw) => codec.parseIncoming(raw, rhea.message.decode(raw))
  : (raw) => codec.parseIncoming(raw);
function run(name, raw, topic) {
  const once = () => { const m = parse(raw); if (topic) m.view(); return m; };
  for (let i = 0; i < 30_000; i++) once();
  const per = [];
  for (let r = 0; r < 7; r++) {
    const n = 100_000;
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) once();
    const c = process.cpuUsage(c0);
    per.push((c.user + c.system) / n);
  }
  per.sort((a, b) => a - b);
  console.log(JSON.stringify({ mode, case: name, bytes: raw.length, usPerMessageMedian: +per[3].toFixed(3), min: +per[0].toFixed(3), max: +per[6].toFixed(3) }));
}
run('queue send, message-id set', withId, false);
run('topic send (filter view built), message-id set', withId, true);
run('queue send, no message-id (one assigned)', withoutId, false);
