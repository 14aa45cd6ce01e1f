// .ci/build-image where the official base image cannot be pulled (no registry, as on this CI host): it must say so in
// words that name the way out, .ci/image-base, rather than leave podman's `pinging container registry … no such host`
// alone. The base is made unavailable without touching this host's images: podman runs on an empty storage of its own
// (CONTAINERS_STORAGE_CONF) with docker.io blocked (CONTAINERS_REGISTRIES_CONF), so the pull fails at once wherever
// the test runs. Nothing is built.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { hasPodman, podmanSkipReason } from '../helpers/podman.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-nobase-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!hasPodman && !process.env.CI)(`.ci/build-image without the base image${podmanSkipReason}`, () => {
  it('fails in one short message that names .ci/image-base, and builds nothing', () => {
    fs.writeFileSync(path.join(dir, 'storage.conf'), `[storage]\ndriver = "vfs"\ngraphroot = "${dir}/graph"\nrunroot = "${dir}/run"\n`);
    fs.writeFileSync(path.join(dir, 'registries.conf'), '[[registry]]\nlocation = "docker.io"\nblocked = true\n');
    const r = spawnSync(path.join(ROOT, '.ci', 'build-image'), ['localhost/peeklock:nobase-test'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        ...process.env,
        PEEKLOCK_BUILDER: 'podman',
        CONTAINERS_STORAGE_CONF: path.join(dir, 'storage.conf'),
        CONTAINERS_REGISTRIES_CONF: path.join(dir, 'registries.conf'),
      },
    });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(1);
    // The Dockerfile's base, the reason podman gave, and the way out.
    expect(r.stderr).toMatch(/^build-image: cannot pull the base image node:20-bookworm-slim \(.+\)$/m);
    expect(r.stderr).toMatch(/^ {2}where no registry is reachable, run \.ci\/image-base first .+$/m);
    // No build was started (its first step would be `[1/2] STEP 1/7`).
    expect(r.stdout).not.toContain('STEP');
  });
});
