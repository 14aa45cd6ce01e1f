// Per-connection authorisation: the claims a connection holds (from `$cbs` put-token, or SASL PLAIN for a
// whole connection), the right each link needs, and the links to drop when their token expires ("When a token
// expires, Service Bus promptly drops all links on the connection to the respective entity", AMQP guide).

import type { AccessRight } from '../config/types.js';
import { BrokerError } from '../broker/errors.js';
import { SystemClock, wallClock, type Clock, type TimerHandle } from '../broker/runtime/clock.js';
import { AuthError, covers, hasRight, verifySas, type Claim, type Keys } from '../auth/sas.js';
import type { RheaLink } from './rhea-types.js';

/**
 * The right a `$management` operation needs: schedule and cancel need Send; everything else, including the
 * rule operations of the SDK's rule manager, needs Listen (docs/filters.md, "Rule management").
 */
export function rightForOperation(operation: string): AccessRight {
  if (/schedule-message|cancel-scheduled-message/.test(operation)) return 'Send';
  return 'Listen';
}

interface Watched {
  link: RheaLink;
  path: string;
  right: AccessRight;
  /** Run when the right lapses, before the detach. */
  lapsed?: () => void;
}

/** The claims of one connection and the links they authorise. */
export class ConnectionAuth {
  private readonly claims = new Map<string, Claim>();
  private readonly watched = new Set<Watched>();
  private timer: TimerHandle | null = null;
  /** Token time: the broker clock (a manual clock's wall time, see `Clock.wallNow`), and its timers. */
  private readonly clock: ReturnType<typeof wallClock>;

  /**
   * `keys` is read at each token: the connection's namespace may be chosen by its first token's key name, and its
   * entities' SAS rules change at run time (a rotated key refuses the next token).
   */
  constructor(
    private readonly keys: () => Keys,
    clock: Clock = new SystemClock(),
  ) {
    this.clock = wallClock(clock);
  }

  /** True while the connection holds a claim in force now (a put-token not yet expired, or a SASL PLAIN login). */
  get authenticated(): boolean {
    const now = this.now();
    for (const c of this.claims.values()) if (c.expiresAt > now) return true;
    return false;
  }

  /** True while a claim in force now covers `path`, with any right (an entity's existence is shown only then). */
  covers(path: string): boolean {
    return (['Listen', 'Send', 'Manage'] as const).some((right) => this.find(path, right) !== undefined);
  }

  /** Grants a SASL PLAIN login's claim: the whole namespace for a policy, one entity for an entity's rule. */
  addPlain(claim: Claim): void {
    this.claims.set(`\0plain:${claim.audience}`, claim);
  }

  /** Validates a put-token; a newer token for the same audience replaces the old one (renewal). */
  putToken(token: string, type: string): Claim {
    if (type !== 'servicebus.windows.net:sastoken') throw new AuthError(`Token type '${type}' is not supported.`);
    const claim = verifySas(token, this.keys(), this.now());
    this.claims.set(claim.audience, claim);
    this.rearm();
    return claim;
  }

  /** Throws Unauthorized unless a current claim with `right` covers `path`. */
  require(path: string, right: AccessRight, endpoint: string): void {
    if (this.find(path, right)) return;
    throw new BrokerError(
      'Unauthorized',
      `Unauthorized access. '${right}' claim(s) are required to perform this operation. Resource: '${endpoint}${path}'.`,
    );
  }

  /**
   * Detaches `link` with amqp:unauthorized-access once no claim authorises it any more; `lapsed` runs first (a
   * delivery link then withdraws its credit from the broker, which does not ask before it delivers).
   */
  watch(link: RheaLink, path: string, right: AccessRight, lapsed?: () => void): () => void {
    const w = { link, path, right, lapsed };
    this.watched.add(w);
    this.rearm();
    return () => this.watched.delete(w);
  }

  /** Stops the expiry timer (connection closed). */
  dispose(): void {
    this.timer?.cancel();
    this.timer = null;
    this.watched.clear();
  }

  private find(path: string, right: AccessRight): Claim | undefined {
    const now = this.now();
    for (const c of this.claims.values()) {
      if (c.expiresAt > now && covers(c.audience, path) && hasRight(c.rights, right)) return c;
    }
    return undefined;
  }

  private now(): number {
    return this.clock.now();
  }

  private rearm(): void {
    this.timer?.cancel();
    this.timer = null;
    const finite = [...this.claims.values()].map((c) => c.expiresAt).filter((t) => Number.isFinite(t) && t > this.now());
    if (!finite.length || !this.watched.size) return;
    const next = Math.min(...finite);
    this.timer = this.clock.setTimer(() => this.expire(), Math.min(2 ** 31 - 1, next - this.now() + 1));
  }

  private expire(): void {
    for (const w of [...this.watched]) {
      if (this.find(w.path, w.right)) continue;
      this.watched.delete(w);
      w.lapsed?.();
      try {
        w.link.close({ condition: 'amqp:unauthorized-access', description: 'The token has expired.' });
      } catch {
        /* link already gone */
      }
    }
    this.rearm();
  }
}
