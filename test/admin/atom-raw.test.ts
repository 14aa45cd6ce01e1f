// The management plane driven by raw HTTP requests: the request shapes of clients that cannot run here
// (Python's prefixed Atom elements and endpoint-only `sr`, .NET's path-only `sr`), and hostile input. Every
// hostile request gets a 4xx with the service's XML error body, and the broker keeps serving afterwards.

import { createHmac } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker;

beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'configured' }], { store: new MemoryStore() });
});
afterAll(async () => {
  await broker.dispose();
});

/** A SAS token as the SDKs build it: HMAC over the URL-encoded `sr` exactly as sent, a newline and the expiry. */
function sas(sr: string, key = 'SAS_KEY_VALUE', name = 'RootManageSharedAccessKey'): string {
  const se = Math.floor(Date.now() / 1000) + 300;
  const encoded = encodeURIComponent(sr);
  const sig = createHmac('sha256', key).update(`${encoded}\n${se}`).digest('base64');
  return `SharedAccessSignature sr=${encoded}&sig=${encodeURIComponent(sig)}&se=${se}&skn=${name}`;
}

interface Reply {
  status: number;
  type: string;
  body: string;
}

function request(method: string, path: string, opts: { body?: string | Buffer; headers?: Record<string, string>; auth?: string | null } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.auth !== null) headers['authorization'] = opts.auth ?? sas(`http://127.0.0.1:${broker.httpPort}`);
  if (opts.body !== undefined) headers['content-length'] = String(Buffer.byteLength(opts.body));
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: broker.httpPort, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error('timed out')));
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

const PY_QUEUE = (inner: string): string =>
  `<?xml version='1.0' encoding='utf-8'?>\n<ns0:entry xmlns:ns0="http://www.w3.org/2005/Atom" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"><ns0:content type="application/xml"><QueueDescription>${inner}</QueueDescription></ns0:content></ns0:entry>`;

/** The service's answer to a GET of a missing entity: 200 with the empty "Publicly Listed Services" feed. */
function expectNotHosted(r: Reply): void {
  expect(r.status).toBe(200);
  expect(r.type).toMatch(/^application\/atom\+xml;type=feed/);
  expect(r.body).toContain('<title type="text">Publicly Listed Services</title>');
  expect(r.body).not.toContain('<entry');
}

function expectXmlError(r: Reply, status: number): void {
  expect(r.status).toBe(status);
  expect(r.type).toMatch(/^application\/xml/);
  expect(r.body).toMatch(new RegExp(`<Error><Code>${status}</Code><Detail>[^<]+</Detail></Error>`));
}

/** The broker still serves: a queue can be created and read back. */
async function stillServes(name: string): Promise<void> {
  expect((await request('PUT', `/${name}?api-version=2021-05`, { body: PY_QUEUE('') })).status).toBe(201);
  expect((await request('GET', `/${name}?api-version=2021-05`)).status).toBe(200);
}

describe('management requests shaped like the other SDKs', () => {
  it("reads Python's prefixed Atom body in any element order, ignoring read-only and unknown elements", async () => {
    const body = PY_QUEUE(
      '<MaxDeliveryCount>4</MaxDeliveryCount><SomethingNew>x</SomethingNew><LockDuration>PT40S</LockDuration>' +
        '<MessageCount>99</MessageCount><CreatedAt>2020-01-01T00:00:00Z</CreatedAt><AuthorizationRules />' +
        '<CountDetails xmlns:d2p1="http://schemas.microsoft.com/netservices/2011/06/servicebus"><d2p1:ActiveMessageCount>5</d2p1:ActiveMessageCount></CountDetails>',
    );
    const r = await request('PUT', '/py-queue?api-version=2021-05', { body, headers: { 'content-type': 'application/atom+xml' } });
    expect(r.status).toBe(201);
    expect(r.type).toMatch(/^application\/atom\+xml;type=entry/);
    const got = await request('GET', '/py-queue?enrich=false&api-version=2021-05');
    expect(got.body).toContain('<LockDuration>PT40S</LockDuration>');
    expect(got.body).toContain('<MaxDeliveryCount>4</MaxDeliveryCount>');
    expect(got.body).toContain('<MessageCount>0</MessageCount>');
    expect(got.body).toContain('<title type="text">py-queue</title>');
    expect(got.body).toMatch(/<id>http:\/\/127\.0\.0\.1:\d+\/py-queue\?api-version=2021-05<\/id>/);
    expect(got.body).toContain('<CountDetails xmlns:d2p1="http://schemas.microsoft.com/netservices/2011/06/servicebus"><d2p1:ActiveMessageCount>0');
  });

  it('accepts any api-version, lower-case $resources with $skip/$top, and a .NET path-only sr', async () => {
    const path = '/$Resources/queues?api-version=2024-05&$skip=0&$top=1';
    const sr = `http://127.0.0.1:${broker.httpPort}/$Resources/queues`;
    const r = await request('GET', path, { auth: sas(sr) });
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/type=feed/);
    expect((r.body.match(/<entry /g) ?? []).length).toBe(1);
    expect(r.body).toContain('rel="self"');
    expect(r.body).toMatch(/rel="next" href="[^"]*%24skip=1&amp;%24top=1/);
  });

  it('takes ForwardTo as an sb:// URL or a bare name, and answers it as sb://<the Host addressed>/<name>', async () => {
    await request('PUT', '/fwd-target?api-version=2021-05', { body: PY_QUEUE('') });
    const url = await request('PUT', '/fwd-url?api-version=2021-05', {
      body: PY_QUEUE(`<ForwardTo>sb://127.0.0.1:${broker.httpPort}/fwd-target</ForwardTo>`),
    });
    const answer = `<ForwardTo>sb://127.0.0.1:${broker.httpPort}/fwd-target</ForwardTo>`;
    expect(url.body).toContain(answer);
    const bare = await request('PUT', '/fwd-bare?api-version=2021-05', { body: PY_QUEUE('<ForwardTo>fwd-target</ForwardTo>') });
    expect(bare.body).toContain(answer);
  });

  it('answers delete with 200 and an empty body, a second delete with 404, and a GET of the gone entity with the empty feed', async () => {
    await request('PUT', '/to-delete?api-version=2021-05', { body: PY_QUEUE('') });
    const r = await request('DELETE', '/to-delete?api-version=2021-05');
    expect(r).toMatchObject({ status: 200, body: '' });
    expectXmlError(await request('DELETE', '/to-delete?api-version=2021-05'), 404);
    expectNotHosted(await request('GET', '/to-delete?api-version=2021-05'));
  });

  it('keeps /health at 200 after a Config.json queue is deleted through the management plane', async () => {
    await request('PUT', '/cfg-like?api-version=2021-05', { body: PY_QUEUE('') });
    expect((await request('DELETE', '/configured?api-version=2021-05')).status).toBe(200);
    const health = await request('GET', '/health', { auth: null });
    expect(health.status).toBe(200);
    // And the name can be created again.
    expect((await request('PUT', '/configured?api-version=2021-05', { body: PY_QUEUE('') })).status).toBe(201);
  });

  it('refuses a missing token and a token signed for another key with 401', async () => {
    expectXmlError(await request('GET', '/$namespaceinfo?api-version=2021-05', { auth: null }), 401);
    expectXmlError(await request('GET', '/configured?api-version=2021-05', { auth: sas(`http://127.0.0.1:${broker.httpPort}`, 'wrong') }), 401);
    // A token for one queue does not cover another.
    expectXmlError(await request('GET', '/configured?api-version=2021-05', { auth: sas(`http://127.0.0.1:${broker.httpPort}/other`) }), 401);
  });
});

describe('topics, subscriptions and rules shaped like Python 7.8.2', () => {
  const entry = (inner: string): string =>
    `<?xml version='1.0' encoding='utf-8'?>\n<ns0:entry xmlns:ns0="http://www.w3.org/2005/Atom" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><ns0:content type="application/xml">${inner}</ns0:content></ns0:entry>`;

  it('creates a topic, a subscription and a correlation rule with xsi:type values, on lower-case paths', async () => {
    expect((await request('PUT', '/py-topic?api-version=2021-05', { body: entry('<TopicDescription />') })).status).toBe(201);
    expect((await request('PUT', '/py-topic/subscriptions/py-sub?api-version=2021-05', { body: entry('<SubscriptionDescription />') })).status).toBe(201);
    const rule = entry(
      '<RuleDescription><Filter xsi:type="CorrelationFilter"><CorrelationId>c</CorrelationId><Properties><KeyValueOfstringanyType>' +
        '<Key>n</Key><Value xmlns:d6p1="http://www.w3.org/2001/XMLSchema" xsi:type="d6p1:int">5</Value></KeyValueOfstringanyType></Properties></Filter>' +
        '<Action xsi:type="EmptyRuleAction" /><Name>py-rule</Name></RuleDescription>',
    );
    const created = await request('PUT', '/py-topic/subscriptions/py-sub/rules/py-rule?api-version=2021-05', { body: rule });
    expect(created.status).toBe(201);
    // Written back the way the service writes it: i:type with a d6p1 value type, ids with capitalised segments.
    expect(created.body).toContain('<Value i:type="d6p1:int" xmlns:d6p1="http://www.w3.org/2001/XMLSchema">5</Value>');
    expect(created.body).toMatch(/<id>http:\/\/127\.0\.0\.1:\d+\/py-topic\/Subscriptions\/py-sub\/Rules\/py-rule\?api-version=2021-05<\/id>/);
    const list = await request('GET', '/py-topic/subscriptions/py-sub/rules?$skip=0&$top=100&api-version=2021-05');
    expect(list.body).toContain('<title type="text">$Default</title>');
    expect(list.body).toContain('<title type="text">py-rule</title>');
    // Python escapes `$`: %24Default.
    expect((await request('DELETE', '/py-topic/subscriptions/py-sub/rules/%24Default?api-version=2021-05')).status).toBe(200);
    const subs = await request('GET', '/py-topic/subscriptions?$skip=0&$top=100&api-version=2021-05');
    expect(subs.body).toMatch(/<id>[^<]*\/py-topic\/Subscriptions\/py-sub\?/);
    expect((await request('DELETE', '/py-topic?api-version=2021-05')).status).toBe(200);
    expectNotHosted(await request('GET', '/py-topic/subscriptions/py-sub?api-version=2021-05'));
    expectNotHosted(await request('GET', '/py-topic/subscriptions/py-sub/rules/py-rule?api-version=2021-05'));
  });
});

describe('SQL rule parameters in raw Atom', () => {
  const entry = (inner: string): string =>
    `<?xml version='1.0' encoding='utf-8'?>\n<ns0:entry xmlns:ns0="http://www.w3.org/2005/Atom" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><ns0:content type="application/xml">${inner}</ns0:content></ns0:entry>`;
  const pair = (key: string, type: string, value: string): string =>
    `<KeyValueOfstringanyType><Key>${key}</Key><Value xmlns:d6p1="http://www.w3.org/2001/XMLSchema" xsi:type="d6p1:${type}">${value}</Value></KeyValueOfstringanyType>`;

  it('stores SqlFilter and SqlRuleAction Parameters and writes them back typed, as the service does', async () => {
    await request('PUT', '/param-topic?api-version=2021-05', { body: entry('<TopicDescription />') });
    await request('PUT', '/param-topic/subscriptions/s?api-version=2021-05', { body: entry('<SubscriptionDescription />') });
    const rule = entry(
      `<RuleDescription><Filter xsi:type="SqlFilter"><SqlExpression>n &gt; @min AND ok = @ok</SqlExpression><Parameters>${pair('@min', 'int', '5')}${pair('@ok', 'boolean', 'true')}</Parameters>` +
        `<CompatibilityLevel>20</CompatibilityLevel></Filter><Action xsi:type="SqlRuleAction"><SqlExpression>SET label = @label</SqlExpression><Parameters>${pair('@label', 'string', 'hi')}</Parameters></Action><Name>p</Name></RuleDescription>`,
    );
    const created = await request('PUT', '/param-topic/subscriptions/s/rules/p?api-version=2021-05', { body: rule });
    expect(created.status).toBe(201);
    const got = await request('GET', '/param-topic/subscriptions/s/rules/p?api-version=2021-05');
    expect(got.body).toContain(
      '<Parameters><KeyValueOfstringanyType><Key>@min</Key><Value i:type="d6p1:int" xmlns:d6p1="http://www.w3.org/2001/XMLSchema">5</Value></KeyValueOfstringanyType>',
    );
    expect(got.body).toContain('<Value i:type="d6p1:boolean" xmlns:d6p1="http://www.w3.org/2001/XMLSchema">true</Value>');
    expect(got.body).toMatch(/<Action i:type="SqlRuleAction"><SqlExpression>SET label = @label<\/SqlExpression><Parameters>.*<Key>@label<\/Key><Value i:type="d6p1:string"[^>]*>hi<\/Value>/);
  });

  it('refuses with 400 a parameter the expression names but the body does not give', async () => {
    const rule = entry('<RuleDescription><Filter xsi:type="SqlFilter"><SqlExpression>n &gt; @min</SqlExpression></Filter><Name>q</Name></RuleDescription>');
    const r = await request('PUT', '/param-topic/subscriptions/s/rules/q?api-version=2021-05', { body: rule });
    expectXmlError(r, 400);
    expect(r.body).toContain('@min');
  });
});

describe('hostile management requests', () => {
  it('refuses an oversized body with 413', async () => {
    const r = await request('PUT', '/big?api-version=2021-05', { body: PY_QUEUE(`<UserMetadata>${'x'.repeat(200_000)}</UserMetadata>`) });
    expectXmlError(r, 413);
    await stillServes('after-big');
  });

  it('drops a body that trickles in, within 12 s rather than holding the socket', async () => {
    const net = await import('node:net');
    const socket = net.connect(broker.httpPort, '127.0.0.1');
    const t0 = Date.now();
    socket.write(`PUT /slow?api-version=2021-05 HTTP/1.1\r\nHost: x\r\nAuthorization: ${sas(`http://127.0.0.1:${broker.httpPort}`)}\r\nContent-Length: 100\r\n\r\n<entry>`);
    await new Promise<void>((resolve) => socket.once('close', () => resolve()).resume());
    expect(Date.now() - t0).toBeLessThan(12_000);
    await stillServes('after-slow');
  }, 20_000);

  it('refuses deeply nested XML with 400', async () => {
    const deep = '<a>'.repeat(5000) + '</a>'.repeat(5000);
    expectXmlError(await request('PUT', '/deep?api-version=2021-05', { body: PY_QUEUE(`<UserMetadata>${deep}</UserMetadata>`) }), 400);
    await stillServes('after-deep');
  });

  it('refuses DTDs: external entities (XXE) and entity expansion (billion laughs) with 400', async () => {
    const xxe = `<?xml version="1.0"?><!DOCTYPE e [<!ENTITY x SYSTEM "file:///etc/passwd">]>${PY_QUEUE('<UserMetadata>&x;</UserMetadata>').replace(/^<\?xml[^>]*\?>\n/, '')}`;
    expectXmlError(await request('PUT', '/xxe?api-version=2021-05', { body: xxe }), 400);
    let lol = '<!ENTITY l0 "lol">';
    for (let i = 1; i < 10; i++) lol += `<!ENTITY l${i} "${`&l${i - 1};`.repeat(10)}">`;
    const laughs = `<?xml version="1.0"?><!DOCTYPE e [${lol}]><entry xmlns="http://www.w3.org/2005/Atom"><content><QueueDescription><UserMetadata>&l9;</UserMetadata></QueueDescription></content></entry>`;
    expectXmlError(await request('PUT', '/laughs?api-version=2021-05', { body: laughs }), 400);
    expectNotHosted(await request('GET', '/xxe?api-version=2021-05'));
    await stillServes('after-dtd');
  });

  it('refuses malformed XML, bad values and unknown statuses with 400, creating nothing', async () => {
    expectXmlError(await request('PUT', '/bad1?api-version=2021-05', { body: '<entry><content>' }), 400);
    expectXmlError(await request('PUT', '/bad2?api-version=2021-05', { body: PY_QUEUE('<LockDuration>forever</LockDuration>') }), 400);
    expectXmlError(await request('PUT', '/bad3?api-version=2021-05', { body: PY_QUEUE('<RequiresSession>maybe</RequiresSession>') }), 400);
    expectXmlError(await request('PUT', '/bad4?api-version=2021-05', { body: PY_QUEUE('<LockDuration>PT1H</LockDuration>') }), 400);
    expectXmlError(await request('PUT', '/bad5?api-version=2021-05', { body: '{"json": true}' }), 400);
    for (const n of ['bad1', 'bad2', 'bad3', 'bad4', 'bad5']) expectNotHosted(await request('GET', `/${n}?api-version=2021-05`));
  });

  it('refuses bad percent-encoding, names over 260 characters and invalid names with 400', async () => {
    expectXmlError(await request('GET', '/%E0%A4%A?api-version=2021-05'), 400);
    expectXmlError(await request('PUT', `/${'n'.repeat(261)}?api-version=2021-05`, { body: PY_QUEUE('') }), 400);
    expectXmlError(await request('PUT', '/has%20space?api-version=2021-05', { body: PY_QUEUE('') }), 400);
    expectXmlError(await request('GET', `/$Resources/queues?api-version=2021-05&$top=-1`), 400);
    // 260 characters is allowed.
    expect((await request('PUT', `/${'n'.repeat(260)}?api-version=2021-05`, { body: PY_QUEUE('') })).status).toBe(201);
    await stillServes('after-names');
  });
});
