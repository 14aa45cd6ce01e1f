// The client snippets of the README ("Connecting") and of docs/clients.md are the files in test/snippets/, verbatim,
// and each one runs here unmodified against a broker on ephemeral ports: the port and the CA come from the environment
// variables the snippets read (PEEKLOCK_PORT, PEEKLOCK_CA; NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE for the
// clients that take the CA from there). Python and Proton are skipped, saying why, where Debian's packages
// are missing (CI installs them).

import { execFile, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { fencedBlocks, readDoc } from '../helpers/docs.js';

const PYTHON = '/usr/bin/python3';
const has = (mod: string): boolean => spawnSync(PYTHON, ['-c', `import ${mod}`], { stdio: 'ignore' }).status === 0;
const hasSdk = has('uamqp, azure.servicebus');
const hasProton = has('proton');
const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const snippet = (name: string): string => fileURLToPath(new URL(`../snippets/${name}`, import.meta.url));
/** Each snippet file and the page that shows it. */
const SNIPPETS: Record<string, string> = {
  'js_start.mjs': 'README.md',
  'python_amqps.py': 'README.md',
  'python_websocket.py': 'docs/clients.md',
  'python_admin.py': 'docs/clients.md',
  'proton_amqps.py': 'docs/clients.md',
  'js_websocket.mjs': 'docs/clients.md',
  'js_admin.mjs': 'docs/clients.md',
};

let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore(), broker: { TlsPort: 0 } });
});
afterAll(async () => broker?.dispose());

/** Runs a snippet with only PATH, HOME and `env` set; resolves with its output. */
async function runSnippet(cmd: string, args: string[], env: Record<string, string>): Promise<string> {
  const { stdout } = await run('timeout', ['60', cmd, ...args], { cwd: ROOT, env: { PATH: process.env.PATH!, HOME: process.env.HOME!, ...env } });
  return stdout.trim();
}

describe('the README and docs/clients.md', () => {
  it('show each client snippet exactly as the file the tests run', () => {
    for (const [name, page] of Object.entries(SNIPPETS)) {
      const text = readDoc(`test/snippets/${name}`);
      const fence = name.endsWith('.py') ? 'python' : 'js';
      expect(fencedBlocks(readDoc(page), fence), `${page} lacks test/snippets/${name} as a \`\`\`${fence} block`).toContain(text);
    }
  });

  it('cover every file in test/snippets/', () => {
    expect(readdirSync(fileURLToPath(new URL('../snippets/', import.meta.url))).sort()).toEqual(Object.keys(SNIPPETS).sort());
  });
});

describe('the JS snippets (@azure/service-bus 7.9.5)', () => {
  it("the README's: sends and completes over plain AMQP with the emulator's connection string", async () => {
    const out = await runSnippet(process.execPath, [snippet('js_start.mjs')], { SERVICEBUS_CONNECTION_STRING: broker.connectionString });
    expect(out).toBe('hello');
    expect(broker.broker.browse('orders')).toEqual([]);
  }, 90_000);

  it('sends and completes over wss on the HTTP port', async () => {
    const out = await runSnippet(process.execPath, [snippet('js_websocket.mjs')], {
      PEEKLOCK_PORT: String(broker.httpPort),
      NODE_EXTRA_CA_CERTS: broker.tls!.caCertPath!,
    });
    expect(out).toBe('hello over wss');
  }, 90_000);

  it('creates, finds and deletes a queue with the admin client through the AMQP port', async () => {
    const out = await runSnippet(process.execPath, [snippet('js_admin.mjs')], { PEEKLOCK_PORT: String(broker.port), NODE_EXTRA_CA_CERTS: broker.tls!.caCertPath! });
    expect(out).toBe('true');
    expect(broker.broker.listEntities().map((e) => e.path)).not.toContain('invoices');
  }, 90_000);
});

describe.skipIf(!hasSdk && !process.env.CI)('the Python snippets (azure-servicebus 7.8.2); need apt-get install python3-azure python3-uamqp', () => {
  it('sends and completes over amqps', async () => {
    // The snippet dials 5671 as a default install listens; only here is the SDK's default port moved to the
    // test broker's ephemeral one, before the snippet runs unchanged.
    const wrapper = 'import runpy, sys, azure.servicebus._common._configuration as c; c.DEFAULT_AMQPS_PORT = int(sys.argv[1]); runpy.run_path(sys.argv[2])';
    const out = await runSnippet(PYTHON, ['-c', wrapper, String(broker.tlsPort), snippet('python_amqps.py')], { PEEKLOCK_CA: broker.tls!.caCertPath! });
    expect(out).toBe('hello over amqps');
  }, 90_000);

  it('sends and completes over wss on the AMQP port', async () => {
    const out = await runSnippet(PYTHON, [snippet('python_websocket.py')], { PEEKLOCK_PORT: String(broker.port), PEEKLOCK_CA: broker.tls!.caCertPath! });
    expect(out).toBe('hello over wss');
  }, 90_000);

  it('creates, lists and deletes a queue with the admin client through the HTTP port', async () => {
    const out = await runSnippet(PYTHON, [snippet('python_admin.py')], { PEEKLOCK_PORT: String(broker.httpPort), REQUESTS_CA_BUNDLE: broker.tls!.caCertPath! });
    expect(out).toBe("['invoices', 'orders']");
  }, 90_000);
});

describe.skipIf(!hasProton && !process.env.CI)('the Qpid Proton snippet; needs apt-get install python3-qpid-proton', () => {
  it('sends and completes over amqps with SASL PLAIN', async () => {
    const out = await runSnippet(PYTHON, [snippet('proton_amqps.py')], { PEEKLOCK_PORT: String(broker.tlsPort), PEEKLOCK_CA: broker.tls!.caCertPath! });
    expect(out).toBe('hello from proton');
  }, 90_000);
});
