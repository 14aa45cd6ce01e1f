// What the server remembers about one attached rhea link: its outgoing DeliveryLink, a send-via destination, how
// to stop watching its token's expiry, and its admission. Kept beside the link in a WeakMap rather than as
// properties on rhea's objects, so a closed link takes all of it with it when it is collected.

import type { DeliveryLink } from './delivery-link.js';

/** A link's admission (admission.ts): the check of the right it needs, or the error its frames are refused with. */
export interface LinkAdmission {
  /** Throws (the broker's error) unless the link's right is in force now; absent = not admitted. */
  check?: () => void;
  /** The error a refused link's frames get. */
  refusal?: { condition: string; description: string };
  /** Transfers received on the link and not yet settled by the broker. */
  unsettled: number;
}

/** Per-link state of the AMQP server. */
export interface LinkState {
  /** For a receiver's link (our sender): the delivery side. */
  delivery?: DeliveryLink;
  /** For a send-via link: the entity its messages go to (com.microsoft:transfer-destination-address). */
  via?: string;
  /** For a sender in a transaction group to another entity: the group's send-via entity its transactional sends go through. */
  transferVia?: string;
  /** Ends the link's token-expiry watch (ConnectionAuth.watch). */
  unwatch?: () => void;
  /** Whether, and how, the link was admitted (admission.ts). */
  admission?: LinkAdmission;
}

const states = new WeakMap<object, LinkState>();

/** The state of `link`, created on first use. */
export function linkState(link: object): LinkState {
  let s = states.get(link);
  if (!s) states.set(link, (s = {}));
  return s;
}

/** The state of `link` if it has any. */
export function peekLinkState(link: object | undefined): LinkState | undefined {
  return link ? states.get(link) : undefined;
}
