// Generator placement: on a machine with two or more CPUs the load generator (this process) and the broker
// under test get CPUs of their own with `taskset`, so the generator's work is not taken from the broker's
// figures. The generator takes the last allowed CPU; brokers are started under `taskset -c` on the others
// (their threads and children inherit it). With one CPU, without `taskset`, or with `--no-pin`, nothing is
// pinned and the report says so.

import { spawnSync } from 'node:child_process';

/** Where the generator and the brokers run, and why pinning was or was not used. */
export interface Pinning {
  used: boolean;
  /** CPU list for brokers (taskset -c syntax), when used. */
  brokerCpus?: string;
  /** CPU list of the generator, when used. */
  generatorCpus?: string;
  /** One line for the report header. */
  note: string;
}

let current: Pinning = { used: false, note: 'generator not pinned (pinning not set up)' };

/** The CPUs this process may run on, from `taskset -pc`; undefined when taskset is unavailable. */
function allowedCpus(): number[] | undefined {
  const r = spawnSync('taskset', ['-pc', String(process.pid)], { encoding: 'utf8' });
  if (r.status !== 0 || r.error) return undefined;
  const list = /:\s*([\d,\-\s]+)$/m.exec(r.stdout)?.[1]?.trim();
  if (!list) return undefined;
  const cpus: number[] = [];
  for (const part of list.split(',')) {
    const [a, b] = part.split('-').map(Number);
    for (let c = a!; c <= (b ?? a!); c++) cpus.push(c);
  }
  return cpus;
}

/** Pins this process (all its threads) to one CPU and records the CPUs left for brokers; `off` disables it. */
export function setUpPinning(off: boolean): Pinning {
  if (off) return (current = { used: false, note: 'generator not pinned (--no-pin): it shares the CPUs with the broker' });
  const cpus = allowedCpus();
  if (!cpus) return (current = { used: false, note: 'generator not pinned (taskset unavailable): it shares the CPUs with the broker' });
  if (cpus.length < 2) return (current = { used: false, note: `generator not pinned (one CPU allowed): it shares CPU ${cpus[0]} with the broker` });
  const gen = String(cpus.at(-1));
  const broker = cpus.slice(0, -1).join(',');
  const r = spawnSync('taskset', ['-a', '-pc', gen, String(process.pid)], { encoding: 'utf8' });
  if (r.status !== 0) return (current = { used: false, note: `generator not pinned (taskset failed: ${(r.stderr || '').trim()})` });
  return (current = { used: true, brokerCpus: broker, generatorCpus: gen, note: `generator pinned to CPU ${gen}, brokers to CPU ${broker} (taskset)` });
}

/** The pinning in force for this run. */
export function pinning(): Pinning {
  return current;
}

/** `cmd args` wrapped in `taskset -c BROKER_CPUS` when pinning is used (taskset execs, so the pid is the broker's). */
export function brokerCommand(cmd: string, args: string[]): [string, string[]] {
  return current.used ? ['taskset', ['-c', current.brokerCpus!, cmd, ...args]] : [cmd, args];
}
