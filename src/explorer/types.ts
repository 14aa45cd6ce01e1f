// The replies of the admin JSON API as the page reads them (the server's side: src/http/explorer-api.ts,
// history.ts and admin-api.ts). Only the fields the page uses are declared.

// The entity rows and the tree are the server's and the CLI's too: declared once, in the shared contract.
export type { EntityRow as TreeEntity, Tree, TreeSubscription, TreeTopic } from '../contract/admin-api.js';
export type { AttemptRow as Attempt } from '../contract/admin-api.js';
import type { MessageHistoryFields } from '../contract/admin-api.js';

/** GET /api/history's reply: samples per series, oldest first. */
export interface History {
  intervalMs: number;
  spanMs: number;
  times: number[];
  series: Record<string, number[]>;
}

/** The namespace's history also names the busiest entities. */
export interface NamespaceHistory extends History {
  busiest: { path: string; traffic: number; depth: number }[];
}

/** A stored message as the admin API lists it (the SDK's ServiceBusReceivedMessage names). */
export interface Message {
  sequenceNumber: number;
  messageId: string | null;
  state: string;
  deliveryCount: number;
  enqueuedTimeUtc: string | null;
  scheduledEnqueueTimeUtc: string | null;
  expiresAtUtc: string | null;
  lockedUntilUtc: string | null;
  lockHolder: string | null;
  deadLetterReason: string | null;
  deadLetterErrorDescription: string | null;
  applicationProperties: Record<string, unknown>;
  bodyPreview: string;
  bodyTruncated: boolean;
  [field: string]: unknown;
}

/** GET /api/entities/{path}/messages's reply. */
export interface MessagePage {
  messages: Message[];
  /** Where a further look would start, when the request stopped early. */
  next: number | null;
}

/** GET /api/message's reply: the whole message, its body as text or base64, and its delivery history. */
export interface MessageDetail extends MessageHistoryFields {
  entity: string;
  lockRemainingMs: number | null;
  message: Message & {
    body: string;
    bodyEncoding: 'text' | 'base64';
    applicationPropertyTypes: Record<string, string>;
  };
}
