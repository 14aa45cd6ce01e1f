// Podman for the container tests (test/container/): builds the repository's Dockerfile on a stand-in for the
// official base (.ci/image-base) and runs the image. Two quirks of this CI host live here and nowhere else: runc
// instead of crun (crun fails on the kernel's hybrid cgroups) with lowered nofile/nproc limits (setrlimit is refused
// above them). A TLS-intercepting proxy's CA is .ci/build-image's business (NODE_EXTRA_CA_CERTS, passed on from this
// process's environment). Every call is bounded in time.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** True where podman is installed and this process is root (rootless podman needs subuid ranges CI does not set). */
export const hasPodman = spawnSync('podman', ['--version'], { encoding: 'utf8' }).status === 0 && process.getuid?.() === 0;

/** Why the container tests are skipped here, as the one line vitest shows (empty where they run). */
export const podmanSkipReason = hasPodman ? '' : ' (skipped: needs root and apt-get install podman runc buildah debootstrap)';

/** Runs podman with `args`; throws with its stderr when it fails or outlasts `timeoutMs`. */
export function podman(args: string[], timeoutMs = 60_000): string {
  const r = spawnSync('podman', args, { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`podman ${args.join(' ')} failed (${r.status ?? r.signal ?? r.error?.message}): ${r.stderr}`);
  return r.stdout.trim();
}

/** Runs a script under .ci/ (bounded); throws with its output when it fails. */
function ciScript(name: string, args: string[], timeoutMs: number): string {
  const r = spawnSync(path.join(ROOT, '.ci', name), args, { cwd: ROOT, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`.ci/${name} failed (${r.status ?? r.signal}): ${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`);
  return r.stdout;
}

/** Makes the stand-in base (cached across runs) and builds the Dockerfile on it as `tag`; returns the seconds each took. */
export function buildImage(tag: string): { baseS: number; buildS: number } {
  let t = performance.now();
  ciScript('image-base', [], 600_000);
  const baseS = (performance.now() - t) / 1000;
  t = performance.now();
  // (a TLS-intercepting proxy's CA reaches the build's npm through .ci/build-image, from NODE_EXTRA_CA_CERTS)
  ciScript('build-image', [tag, '--pull=never', '--network=host'], 600_000);
  return { baseS, buildS: (performance.now() - t) / 1000 };
}

/** `podman run -d` with this host's runtime and limits; returns the container's id. */
export function runDetached(args: string[]): string {
  return podman(['--runtime', 'runc', 'run', '-d', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024', ...args]);
}

/** The host port podman published for `containerPort` (published on 127.0.0.1 with a free host port). */
export function hostPort(container: string, containerPort: number): number {
  const line = podman(['port', container, `${containerPort}/tcp`]);
  return Number(line.slice(line.lastIndexOf(':') + 1));
}

/** The container's log (stdout and stderr) so far. */
export function logs(container: string): string {
  const r = spawnSync('podman', ['logs', container], { encoding: 'utf8', timeout: 30_000 });
  return `${r.stdout}${r.stderr}`;
}

/** Resolves with the milliseconds until `text` appears in the container's log; rejects with the log after `timeoutMs`. */
export async function waitForLog(container: string, text: string, timeoutMs = 60_000): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < timeoutMs / 100; i++) {
    if (logs(container).includes(text)) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no "${text}" in ${timeoutMs} ms: ${logs(container)}`);
}

/** Stops the container (podman's default 10 s before SIGKILL) and returns seconds taken and its exit code. */
export function stop(container: string): { stopS: number; exitCode: number } {
  const t = performance.now();
  podman(['stop', container], 30_000);
  const stopS = (performance.now() - t) / 1000;
  return { stopS, exitCode: Number(podman(['inspect', container, '--format', '{{.State.ExitCode}}'])) };
}

/** Milliseconds from the container's start (as podman recorded it) to the log line `msg` (the broker's own clock). */
export function msFromStart(container: string, msg: string): number {
  const startedAt = Date.parse(podman(['inspect', container, '--format', '{{.State.StartedAt.Format "2006-01-02T15:04:05.000Z07:00"}}']));
  const line = logLines(container).find((l) => l.msg === msg);
  if (!line) throw new Error(`no "${msg}" line: ${logs(container)}`);
  return (line.time as number) - startedAt;
}

/** The JSON log lines of a container (the broker logs JSON when not on a terminal). */
export function logLines(container: string): { msg: string; level: number; [k: string]: unknown }[] {
  return logs(container)
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; level: number });
}

/** Podman's Docker-compatible API on a socket of its own, for Docker clients such as Testcontainers; stop() ends it. */
export async function podmanService(dir: string): Promise<{ dockerHost: string; stop: () => void }> {
  // The service creates containers itself, so this host's runtime and limits go in its containers.conf.
  const conf = path.join(dir, 'containers.conf');
  fs.writeFileSync(conf, '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n[engine]\nruntime = "runc"\n');
  const socket = path.join(dir, 'podman.sock');
  const proc = spawn('podman', ['--runtime', 'runc', 'system', 'service', '--time=0', `unix://${socket}`], {
    stdio: 'ignore',
    env: { ...process.env, CONTAINERS_CONF: conf },
  });
  for (let i = 0; i < 100 && !fs.existsSync(socket); i++) await new Promise((r) => setTimeout(r, 100));
  if (!fs.existsSync(socket)) throw new Error('podman system service made no socket in 10 s');
  return { dockerHost: `unix://${socket}`, stop: () => proc.kill('SIGTERM') };
}
