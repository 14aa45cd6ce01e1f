// The bounds on what one request may cost: every count, page and list a client chooses is checked against a
// named limit here, so no request reads, encodes or walks a whole deep entity on the event loop (issue 25,
// "costs a caller cannot inflate"). Where Service Bus documents a limit, the value is Service Bus's; where it does
// not, the comment says why this value was chosen. The HTTP and AMQP layers import these names; none of them
// hard-codes a limit of its own.

/**
 * Most messages one `com.microsoft:peek-message` returns. A larger `message-count` is served with this many:
 * Service Bus's peek "returns at most the requested number of messages" (message-browsing docs), and every SDK
 * pages on from the last sequence number it was given, so a shorter answer is an ordinary one. The value is the
 * admin API's own page limit.
 */
export const MAX_PEEK_MESSAGES = 1000;

/**
 * Stored message bytes one peek reply carries at most (it always carries one message, whatever its size):
 * 1,000 messages of the largest size would be a reply of a quarter of a gigabyte encoded in one turn of the
 * event loop. A peek that reaches this stops early, which the SDKs read like any shorter answer.
 */
export const MAX_PEEK_REPLY_BYTES = 16 * 1024 * 1024;

/** Messages a peek reads and encodes between two yields to the event loop (a few milliseconds of work). */
export const PEEK_SLICE = 100;

/**
 * Stored rows one browse (the admin API's message views, a peek with a session filter) looks at before it answers
 * with what it found and where to go on. Each row is a memory lookup or one store read; 10,000 of them take a few
 * milliseconds, far inside the 50 ms event-loop budget, however deep the entity.
 */
export const MAX_BROWSE_SCAN = 10_000;

/**
 * Messages a filter of the admin API's message actions (and its dry run) examines per request. A filter that
 * matches nothing on a deep queue stops here and says where it stopped (`next`), instead of reading the queue
 * whole; the work is done in pages that yield to the event loop between them.
 */
export const MAX_FILTER_SCAN = 50_000;

/**
 * Messages a filter examines between two yields to the event loop: decoding one for the filter takes tens of
 * microseconds, so a page stays a few milliseconds long.
 */
export const FILTER_PAGE = 100;

/** Most messages a filter selects (and one message action acts on). */
export const MAX_SELECTION = 10_000;

/** Most sequence numbers one message action of the admin API lists (well inside the 64 KB request limit). */
export const MAX_ACTION_SEQUENCE_NUMBERS = 1000;

/** Most messages the admin API's message views return per request. */
export const MAX_VIEW_COUNT = 1000;

/**
 * Most sequence numbers one `receive-by-sequence-number` or `cancel-scheduled-message` request names. Service Bus
 * does not document one; the reply of a receive carries every message named, so the count bounds its size
 * (1,000 × MaxMessageSizeBytes), as MAX_PEEK_MESSAGES bounds a peek's.
 */
export const MAX_MANAGEMENT_SEQUENCE_NUMBERS = 1000;

/**
 * Most lock tokens one `renew-lock` or `update-disposition` request names (each one is a lock renewed or a
 * settlement written). The SDKs send one token per call; 1,000 leaves room for any batch a client builds.
 */
export const MAX_MANAGEMENT_LOCK_TOKENS = 1000;

/**
 * Most messages one `schedule-message` request carries. The request is bounded in bytes by the link's
 * max-message-size already; this bounds the count of small ones. .NET's ServiceBusMessageBatch once capped a batch
 * at 4,500 messages; the same figure here.
 */
export const MAX_SCHEDULE_MESSAGES = 4500;

/**
 * Most session ids one `get-message-sessions` reply lists; a larger `top` is served with this many (the reply's
 * `skip` says where the next page starts, and the clients page on it).
 */
export const MAX_SESSIONS_PAGE = 100;

/**
 * Most messages one `batch-delete-messages` call deletes. Azure's batch-delete quota is 500 per request on the
 * Standard tier (4,000 on Premium); peeklock's defaults are the Standard tier's (256 KB messages), and 500 is the
 * batch size every current SDK's purge uses.
 */
export const MAX_DELETE_MESSAGE_COUNT = 500;

/** Largest page an Atom feed (queues, topics, subscriptions, rules) returns, as the service caps `$top`. */
export const MAX_ATOM_PAGE = 100;

/**
 * Subscriptions one topic may have (Service Bus quotas doc, "Number of subscriptions per topic": 2,000; further
 * requests are rejected with QuotaExceeded). The per-topic filter quotas live with the rules
 * (MAX_SQL_FILTERS_PER_TOPIC, MAX_CORRELATION_FILTERS_PER_TOPIC in src/filters/rules.ts).
 */
export const MAX_SUBSCRIPTIONS_PER_TOPIC = 2000;

/**
 * Most rules one `com.microsoft:enumerate-rules` reply lists; a larger `top` is served with this many. The SDKs
 * page on until an empty reply (JS 7.10 `listRules` asks 100 at a time, .NET 100 per request), so a shorter page
 * is an ordinary one; without a bound, a reply could carry a whole topic's 100,000 correlation filters.
 */
export const MAX_RULES_PAGE = 1000;
