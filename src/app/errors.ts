// Start-up failures of the listeners, worded for the person who started the broker: which port, why, and the
// flag that changes it. Like the store's errors they are `userFacing`: the CLI prints the message as one line.

/** Which listener failed, and the flag and config key that move it. */
const LISTENERS = {
  amqp: { label: 'AMQP', flag: '--port (or Broker.Port)' },
  http: { label: 'HTTP', flag: '--http-port (or Broker.HttpPort)' },
  amqps: { label: 'amqps (TLS)', flag: '--tls-port (or Broker.TlsPort; -1 turns it off)' },
  https: { label: 'HTTPS', flag: 'Broker.HttpsPort (-1 or unset turns it off)' },
} as const;

/** A listener could not bind its port (taken, privileged, or an address that is not on this machine). */
export class ListenError extends Error {
  override name = 'ListenError';
  /** A one-line message naming the cause and the fix. */
  readonly userFacing = true;

  /** Builds the message from the bind error's code. */
  constructor(
    readonly listener: keyof typeof LISTENERS,
    readonly host: string,
    readonly port: number,
    cause: NodeJS.ErrnoException,
  ) {
    const { label, flag } = LISTENERS[listener];
    const code = cause.code ?? 'error';
    let text: string;
    if (code === 'EADDRINUSE') {
      text = `the ${label} port ${port} on ${host} is already in use by another program; stop it, or choose another port with ${flag}`;
    } else if (code === 'EACCES') {
      text = `the ${label} port ${port} on ${host} needs privileges this user does not have (EACCES); choose a port from 1024 up with ${flag}`;
    } else if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      text = `cannot listen on ${host}: no such address on this machine (${code}); choose another with --host (or Broker.Host)`;
    } else {
      text = `cannot listen on ${host}:${port} for ${label} (${code}: ${cause.message}); choose another port with ${flag}`;
    }
    super(text, { cause });
  }
}

/** Wraps a bind failure from `listen()` as a ListenError; anything else passes through. */
export function asListenError(err: unknown, listener: keyof typeof LISTENERS, host: string, port: number): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' ? new ListenError(listener, host, port, err as NodeJS.ErrnoException) : err;
}
