// The `$cbs` endpoint, and the two ways a connection proves who it is: a SAS token put on `$cbs` (what the SDKs do
// after SASL ANONYMOUS) and a SASL PLAIN login (JMS and Proton clients). Both are checked against the keys of the
// connection's namespace (tenant.ts), which the first token may still choose.

import { amqpInt, echoRequestSettleMode } from './rhea.js';
import { wireError } from '../errors/table.js';
import type { Logger } from '../log/logger.js';
import { AuthError, tokenKeyName, verifyPlainLogin, type Claim } from '../auth/sas.js';
import type { ConnState } from './connection-state.js';
import { acceptRequest, echoTermini, type Endpoint } from './endpoint.js';
import type { RheaContext, RheaMessage } from './rhea-types.js';
import { hostLabel, tenantKeys, type Tenant, type TenantDirectory } from './tenant.js';

/** The claims-based security node's address. */
const CBS = '$cbs';

/**
 * The `$cbs` node: a client's sender carries put-token requests, its receiver takes the replies. Each request is
 * authorised by the token it carries, so both links are admitted as they are.
 */
export const cbsEndpoint: Endpoint = {
  node: '$cbs',
  matches: (_l, address) => address === CBS,

  attach(l, _address, st) {
    if (!echoTermini(l.link, st)) return;
    echoRequestSettleMode(l.link);
    if (l.role === 'receiver') {
      st.cbsLinks.push(l.link);
      st.replyLinks.set(l.link.name, l.link);
    }
    st.admission.admit(l.link);
  },

  transfer: (ctx, st, env) => handleCbs(ctx, st, env.tenants, env.log),

  // The reply link's records go with it (a connection may open many over its life).
  detached(l, st) {
    if (!st || l.role !== 'receiver') return;
    for (const [key, reply] of st.replyLinks) if (reply === l.link) st.replyLinks.delete(key);
    const i = st.cbsLinks.indexOf(l.link);
    if (i >= 0) st.cbsLinks.splice(i, 1);
  },
};

// Settles an unbound connection's namespace by a key name (a token's skn, a PLAIN user name); synchronous unless a
// namespace is being created. Concurrent tokens of one connection may race; the first to finish wins and the others
// are then checked against its keys.
function bind(st: ConnState, tenants: TenantDirectory, keyName: string | null, token?: string): void | Promise<void> {
  if (st.bound) return;
  const settle = (chosen: Tenant | null): void => {
    if (st.bound) return;
    if (chosen) st.tenant = chosen;
    st.bound = true;
  };
  const chosen = keyName === null ? null : tenants.byKeyName(keyName, token);
  if (chosen instanceof Promise) return chosen.then(settle);
  settle(chosen);
}

/**
 * `$cbs` put-token: the SAS token is verified (signature, expiry, policy of the connection's namespace) and
 * becomes a claim of this connection. The reply goes on the connection's `$cbs` receiver, whose target has no
 * address: match reply-to against the link name (docs/wire-contract.md, "Claims-based security ($cbs)").
 * Tokens are never logged.
 */
export function handleCbs(ctx: RheaContext, st: ConnState, tenants: TenantDirectory, log: Logger): void {
  const req = ctx.message as RheaMessage;
  acceptRequest(ctx);
  const app = req.application_properties ?? {};
  const token = String(req.body ?? '');
  const answer = (props: Record<string, unknown>): void => {
    const out = (req.reply_to && st.replyLinks.get(req.reply_to)) || st.cbsLinks[st.cbsLinks.length - 1];
    if (out) out.send({ correlation_id: req.message_id, to: req.reply_to, application_properties: props });
  };
  const refuse = (err: unknown): void => {
    // Anything that fails a put-token is a refused token (401), whatever broke inside.
    const refused = wireError(err instanceof AuthError ? err : new AuthError('The token could not be validated.'));
    log.info({ conn: st.id, audience: app.name, reason: refused.description }, 'token refused');
    answer({ 'status-code': amqpInt(refused.status), 'status-description': refused.description, 'error-condition': refused.condition });
  };
  if (app.operation !== 'put-token') return refuse(new AuthError(`Unsupported $cbs operation '${String(app.operation)}'.`));
  const check = (): void => {
    try {
      const claim = st.auth.putToken(token, String(app.type ?? ''));
      log.debug({ conn: st.id, namespace: st.tenant.name, policy: claim.policy, audience: claim.audience }, 'token accepted');
      answer({ 'status-code': amqpInt(202), 'status-description': 'Accepted' });
    } catch (err) {
      refuse(err);
    }
  };
  const pending = bind(st, tenants, tokenKeyName(token), token);
  if (pending) void pending.then(check, refuse);
  else check();
}

/**
 * The SASL PLAIN check (user name = policy name, password = key, as Service Bus accepts from JMS): the namespace the
 * key was checked in — the one the SASL hostname names, else the default one or the one the user name names — or
 * null when it opens none. The connection is then bound to that namespace (bindPlain).
 */
export function plainLogin(tenants: TenantDirectory, user: string, password: string, host: string | undefined): PlainLogin | null {
  const named = hostLabel(host) ? tenants.byHost(host!) : null;
  // A namespace policy's claim covers the namespace; an entity SAS rule's claims cover its entities only.
  const check = (tenant: Tenant): PlainLogin | null => {
    const claims = verifyPlainLogin(user, password, tenantKeys(tenant));
    return claims.length ? { tenant, claims } : null;
  };
  if (named) return check(named);
  const fallback = check(tenants.fallback);
  if (fallback) return fallback;
  const other = tenants.byKeyName(user);
  return other instanceof Promise || other === null ? null : check(other);
}

/** A SASL PLAIN login: the namespace its key was checked in, and the claims it grants (the namespace, or entities). */
export interface PlainLogin {
  tenant: Tenant;
  claims: Claim[];
}

/**
 * Binds a connection to the namespace its SASL PLAIN login was checked in, with the login's claim, and keeps it
 * there (a later token cannot move it). False, and nothing granted, when the AMQP open names another namespace:
 * one namespace's key never opens another.
 */
export function bindPlain(st: ConnState, login: PlainLogin): boolean {
  if (st.bound && st.tenant !== login.tenant) return false;
  st.tenant = login.tenant;
  st.bound = true;
  for (const claim of login.claims) st.auth.addPlain(claim);
  return true;
}
