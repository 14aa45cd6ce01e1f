// The explorer page served at `/`: plain HTML, CSS and JavaScript in one string, no build step. It signs
// its admin API calls with a SAS token made in the browser (Web Crypto HMAC-SHA256) from the key the user
// types, kept only in sessionStorage. Message content is inserted as text, never as HTML. Message fields
// carry the SDK's names (what a receiver sees) and times are shown in UTC. Nothing is loaded from elsewhere,
// so the page works offline. The tree (queues, topics → subscriptions with their rules) comes from
// GET /api/tree, the charts from GET /api/history (explorer-charts.ts); the selection, view and filter live in
// the URL's hash, so a view can be shared and reloaded. With 1,000 entities a refresh rewrites only the
// counts of rows already drawn: the tree is rebuilt only when the set of entities or the filter changes.
// Sending, resubmitting, deleting and dead-lettering messages and creating or deleting entities live in
// explorer-actions.ts; the base CSS in explorer-style.ts.

import { CHART_SCRIPT, CHART_STYLE, chartPanel } from './explorer-charts.js';
import { ACTIONS_HTML, ACTIONS_SCRIPT, ACTIONS_STYLE, BULK_HTML } from './explorer-actions.js';
import { DETAIL_HTML, DETAIL_SCRIPT, DETAIL_STYLE } from './explorer-detail.js';
import { BASE_STYLE } from './explorer-style.js';

const STYLE = `${BASE_STYLE}${DETAIL_STYLE}${CHART_STYLE}${ACTIONS_STYLE}`;

const SCRIPT = `
const $ = (s) => document.querySelector(s);
const state = { entity: null, kind: null, view: 'active', filter: '', token: null, tokenUntil: 0 };
const VIEWS = { active: 'Active', deadletter: 'Dead-letter', scheduled: 'Scheduled', deferred: 'Deferred' };

function b64(bytes) { let s = ''; for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b); return btoa(s); }

async function token() {
  const now = Math.floor(Date.now() / 1000);
  if (state.token && state.tokenUntil - now > 60) return state.token;
  if (!crypto.subtle) throw new Error('This page needs Web Crypto: open it on 127.0.0.1 / localhost or over HTTPS.');
  const keyName = $('#keyName').value, key = $('#key').value;
  const se = now + 3600;
  const sr = encodeURIComponent(location.origin + '/');
  const k = await crypto.subtle.importKey('raw', new TextEncoder().encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const sig = b64(await crypto.subtle.sign('HMAC', k, new TextEncoder().encode(sr + '\\n' + se)));
  state.token = 'SharedAccessSignature sr=' + sr + '&sig=' + encodeURIComponent(sig) + '&se=' + se + '&skn=' + encodeURIComponent(keyName);
  state.tokenUntil = se;
  return state.token;
}

async function api(path, init) {
  const res = await fetch('/api/' + path, { ...init, headers: { authorization: await token(), 'content-type': 'application/json' } });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error((body.error && body.error.message) || ('HTTP ' + res.status));
  return body;
}

function status(text, isError) { const s = $('#status'); s.textContent = text; s.className = isError ? 'error' : ''; }

function cell(tr, text, cls) { const td = document.createElement('td'); td.textContent = String(text); if (cls) td.className = cls; tr.appendChild(td); return td; }

// The selection lives in the hash (#entity=…&view=…&filter=…) so a view can be shared and reloaded.
function readHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  state.entity = h.get('entity') || null;
  state.view = VIEWS[h.get('view')] ? h.get('view') : 'active';
  state.filter = h.get('filter') || '';
  state.seq = Number(h.get('seq')) || null;
  $('#filter').value = state.filter;
}
function writeHash() {
  const h = new URLSearchParams();
  if (state.entity) h.set('entity', state.entity);
  if (state.view !== 'active') h.set('view', state.view);
  if (state.filter) h.set('filter', state.filter);
  if (state.seq) h.set('seq', String(state.seq));
  const next = '#' + h.toString();
  if (location.hash !== next) history.replaceState(null, '', next);
}
function select(entity, view) {
  if (entity !== state.entity || (view && view !== state.view)) closeDetail();
  state.entity = entity;
  if (view) state.view = view;
  writeHash();
  refresh();
}

const COUNT_KEYS = ['active', 'locked', 'scheduled', 'deferred'];
let drawn = { key: null, rows: new Map() };

/** Tree rows in order: queues, then each topic followed by its subscriptions (with their rules). */
function treeRows(tree) {
  const f = state.filter.toLowerCase();
  const hit = (p) => !f || p.toLowerCase().includes(f);
  const rows = [];
  for (const q of tree.queues) if (hit(q.path)) rows.push({ kind: 'queue', e: q });
  for (const t of tree.topics) {
    const subs = hit(t.path) ? t.subscriptions : t.subscriptions.filter((s) => hit(s.path));
    if (!subs.length && !hit(t.path)) continue;
    rows.push({ kind: 'topic', e: t });
    for (const s of subs) rows.push({ kind: 'subscription', e: s });
  }
  return rows;
}

function entityRow(kind, e) {
  const tr = document.createElement('tr');
  tr.className = kind === 'topic' ? 'topic' : 'entity ' + kind;
  const first = cell(tr, kind === 'subscription' ? e.name : e.path);
  if (kind === 'topic') {
    tr.dataset.topic = e.path;
    const k = document.createElement('span'); k.className = 'kind';
    k.textContent = 'topic · ' + e.subscriptions.length + ' subscription(s)'; first.appendChild(k);
    cell(tr, '').colSpan = 7;
    tr.onclick = () => select(e.path, 'active');
    return tr;
  }
  tr.dataset.entity = e.path;
  if (kind === 'subscription') {
    const rules = document.createElement('div'); rules.className = 'rules';
    rules.textContent = e.rules.length ? e.rules.join('\\n') : 'no rules: receives nothing';
    rules.style.whiteSpace = 'pre';
    first.appendChild(rules);
  }
  for (const k of COUNT_KEYS) cell(tr, '', 'num').dataset.count = k;
  const dl = cell(tr, '', 'num dlq'); dl.dataset.count = 'deadLettered';
  dl.onclick = (ev) => { ev.stopPropagation(); select(e.path, 'deadletter'); };
  cell(tr, '', 'num').dataset.count = 'bytes';
  cell(tr, '', 'num').dataset.count = 'consumers';
  tr.onclick = () => select(e.path);
  return tr;
}

function fillCounts(tr, e) {
  for (const td of tr.querySelectorAll('td[data-count]')) {
    const v = String(e[td.dataset.count]);
    if (td.textContent !== v) td.textContent = v;
  }
  const dl = tr.querySelector('td[data-count="deadLettered"]');
  dl.classList.toggle('alert', !!e.deadLetterAlert);
  dl.title = e.deadLetterAlert ? 'at or above the alert threshold (' + e.deadLetterThreshold + ')' : 'open the dead-letter queue';
}

async function loadEntities() {
  const tree = await api('tree');
  const rows = treeRows(tree);
  // Rebuild only when the rows change; otherwise update the counts in place (fast with 1,000 entities).
  const key = rows.map((r) => r.kind[0] + r.e.path + (r.e.rules ? r.e.rules.join('|') : '')).join('\\n');
  if (key !== drawn.key) {
    const frag = document.createDocumentFragment();
    const map = new Map();
    for (const r of rows) { const tr = entityRow(r.kind, r.e); map.set(r.kind + ':' + r.e.path, tr); frag.appendChild(tr); }
    $('#entities tbody').replaceChildren(frag);
    drawn = { key, rows: map };
  }
  for (const r of rows) if (r.kind !== 'topic') fillCounts(drawn.rows.get(r.kind + ':' + r.e.path), r.e);
  const all = [...tree.queues, ...tree.topics.flatMap((t) => t.subscriptions)];
  if (!state.entity && all.length) { state.entity = all[0].path; writeHash(); }
  const topic = tree.topics.find((t) => t.path === state.entity);
  state.kind = topic ? 'topic' : 'entity';
  for (const [k, tr] of drawn.rows) tr.classList.toggle('selected', k.slice(k.indexOf(':') + 1) === state.entity);
  $('#ns-title').textContent = 'Namespace ' + tree.namespace + ' (all entities summed)';
  $('#shown').textContent = tree.namespace + ': ' + rows.filter((r) => r.kind !== 'topic').length + ' of ' + all.length + ' entities' + (state.filter ? ' match' : '');
}

async function loadCharts() {
  const ns = await api('history');
  drawPanel('ns', ns);
  const list = $('#busiest');
  list.replaceChildren();
  for (const b of ns.busiest) {
    const li = document.createElement('li'); li.dataset.entity = b.path;
    li.textContent = b.path + ' — ' + b.traffic + ' sent+delivered, depth ' + b.depth;
    li.onclick = () => select(b.path);
    list.appendChild(li);
  }
  if (!ns.busiest.length) { const li = document.createElement('li'); li.className = 'muted'; li.textContent = 'No traffic in the last hour.'; list.appendChild(li); }
  $('#entity-panel').hidden = !state.entity;
  if (!state.entity) return;
  const h = await api('history?entity=' + encodeURIComponent(state.entity));
  $('#entity-title').textContent = state.entity;
  drawPanel('entity', h);
}

// Columns of the message table, keyed by the admin API's field (the SDK's ServiceBusReceivedMessage names).
// 'views' limits a column to some views: dead-letter fields are always empty outside the dead-letter queue,
// and a scheduled message has a due time but can never be locked.
const COLUMNS = [
  { key: 'sequenceNumber', label: 'Seq', cls: 'num' },
  { key: 'messageId', label: 'Message id' },
  { key: 'state', label: 'State' },
  { key: 'deliveryCount', label: 'Deliveries', cls: 'num' },
  { key: 'enqueuedTimeUtc', label: 'Enqueued (UTC)', time: true },
  { key: 'scheduledEnqueueTimeUtc', label: 'Scheduled for (UTC)', time: true, views: ['scheduled'] },
  { key: 'expiresAtUtc', label: 'Expires (UTC)', time: true, none: 'never' },
  { key: 'lockedUntilUtc', label: 'Locked until (UTC)', views: ['active', 'deadletter', 'deferred'] },
  { key: 'deadLetterReason', label: 'Dead-letter reason', views: ['deadletter'] },
  { key: 'deadLetterErrorDescription', label: 'Dead-letter description', views: ['deadletter'] },
  { key: 'properties', label: 'Properties' },
  { key: 'body', label: 'Body' },
];
// Message properties shown in the Properties column when set, under the SDK's names.
const PROPERTY_KEYS = ['correlationId', 'contentType', 'subject', 'to', 'replyTo', 'replyToSessionId', 'sessionId',
  'partitionKey', 'timeToLive', 'deadLetterSource'];

/** ISO time as "YYYY-MM-DD hh:mm:ss" (UTC, as the column headers say). */
function utc(iso) { return iso ? iso.slice(0, 19).replace('T', ' ') : ''; }

function properties(m) {
  const out = {};
  for (const k of PROPERTY_KEYS) if (m[k] !== null && m[k] !== undefined) out[k] = m[k];
  // The dead-letter reason and description have their own columns.
  const app = { ...m.applicationProperties };
  delete app.DeadLetterReason; delete app.DeadLetterErrorDescription;
  if (Object.keys(app).length) out.applicationProperties = app;
  return out;
}

function messageCell(tr, col, m) {
  let td;
  if (col.key === 'properties' || col.key === 'body') {
    const pre = document.createElement('pre');
    // Properties one per line as name: JSON value, so a string "2" and a number 2 still look different.
    pre.textContent = col.key === 'body' ? m.bodyPreview + (m.bodyTruncated ? ' …' : '')
      : Object.entries(properties(m)).map(([k, v]) => k + ': ' + JSON.stringify(v)).join('\\n');
    td = cell(tr, '');
    td.appendChild(pre);
  } else if (col.key === 'lockedUntilUtc') {
    td = cell(tr, m.lockedUntilUtc ? utc(m.lockedUntilUtc) + (m.lockHolder ? ' by ' + m.lockHolder : '') : '');
  } else if (col.time) {
    td = cell(tr, m[col.key] ? utc(m[col.key]) : (col.none || ''), 'time');
    if (m[col.key]) td.title = m[col.key];
  } else {
    td = cell(tr, m[col.key] ?? '', col.cls);
  }
  td.dataset.col = col.key;
}

async function loadMessages() {
  $('#selected').textContent = state.entity || '';
  const topic = state.kind === 'topic';
  for (const b of document.querySelectorAll('nav button')) b.className = b.dataset.view === state.view ? 'on' : '';
  $('nav').hidden = topic;
  $('#redrive').hidden = topic || state.view !== 'deadletter';
  $('#purge').hidden = topic || (state.view !== 'active' && state.view !== 'deadletter');
  syncActions();
  const columns = COLUMNS.filter((c) => !c.views || c.views.includes(state.view));
  const head = $('#messages thead tr');
  head.replaceChildren();
  for (const c of columns) {
    const th = document.createElement('th'); th.textContent = c.label; th.dataset.col = c.key;
    if (c.cls) th.className = c.cls;
    head.appendChild(th);
  }
  if (!topic && state.entity) actionHead(head);
  const span = columns.length + (!topic && state.entity ? 2 : 0);
  const tbody = $('#messages tbody');
  if (!state.entity) return tbody.replaceChildren();
  if (topic) {
    const tr = document.createElement('tr');
    cell(tr, 'A topic stores nothing itself: pick one of its subscriptions to see messages.', 'muted').colSpan = span;
    return tbody.replaceChildren(tr);
  }
  const { messages, next } = await api('entities/' + encodeURIComponent(state.entity) + '/messages?view=' + state.view + '&count=100');
  tbody.replaceChildren();
  for (const m of messages) {
    const tr = document.createElement('tr');
    tr.className = 'message' + (m.sequenceNumber === state.seq ? ' open' : '');
    tr.dataset.seq = m.sequenceNumber;
    tr.onclick = () => showDetail(m.sequenceNumber);
    for (const c of columns) messageCell(tr, c, m);
    actionCells(tr, m);
    tbody.appendChild(tr);
  }
  if (!messages.length) { const tr = document.createElement('tr'); cell(tr, 'No messages.', 'muted').colSpan = span; tbody.appendChild(tr); }
  // A view looks at a bounded number of stored messages per request (the admin API's next).
  if (next && messages.length < 100) { const tr = document.createElement('tr'); cell(tr, 'Only the front of the queue was looked at (up to sequence number ' + (next - 1) + ').', 'muted').colSpan = span; tbody.appendChild(tr); }
}


let busy = false, again = false;
// One refresh at a time; a click or hash change during one is not lost: it runs once more after.
async function refresh() {
  if (busy) { again = true; return; }
  busy = true;
  try {
    await loadEntities();
    await Promise.all([loadMessages(), loadCharts()]);
    if ($('#status').className === 'error') status('');
    // Set only when both loads succeeded: after an error it shows how old the figures on the page are.
    const now = new Date();
    $('#refreshed').textContent = 'Last refreshed ' + now.toISOString().slice(11, 19) + ' UTC';
    $('#refreshed').dataset.at = now.toISOString();
  }
  catch (err) { status(err.message, true); }
  finally { busy = false; if (again) { again = false; refresh(); } }
}

async function redrive() {
  const reason = $('#reason').value.trim();
  const what = 'Redrive ' + (reason ? 'dead letters with reason "' + reason + '"' : 'every dead letter') + ' of ' + state.entity +
    ' back to the queue? They will be delivered again: the consumer must be idempotent.';
  if (!confirm(what)) return;
  try {
    const r = await api('entities/' + encodeURIComponent(state.entity) + '/redrive', { method: 'POST', body: JSON.stringify(reason ? { reason } : {}) });
    status('Redrive: moved ' + r.moved + ', skipped ' + r.skipped + ', failed ' + r.failed + '.');
  } catch (err) { status(err.message, true); }
  refresh();
}

async function purge() {
  const what = state.view === 'deadletter' ? 'the dead-letter queue of ' + state.entity : 'every message of ' + state.entity;
  if (!confirm('Delete ' + what + ' for good?')) return;
  try {
    const r = await api('entities/' + encodeURIComponent(state.entity) + '/purge', { method: 'POST', body: JSON.stringify({ view: state.view }) });
    status('Purged ' + r.purged + ' message(s) from ' + r.entity + '.');
  } catch (err) { status(err.message, true); }
  refresh();
}

function init() {
  $('#keyName').value = sessionStorage.getItem('peeklock.keyName') || 'RootManageSharedAccessKey';
  $('#key').value = sessionStorage.getItem('peeklock.key') || '';
  $('#connect').onclick = () => {
    sessionStorage.setItem('peeklock.keyName', $('#keyName').value);
    sessionStorage.setItem('peeklock.key', $('#key').value);
    state.token = null;
    status('');
    refresh();
  };
  const nav = $('nav');
  for (const [view, label] of Object.entries(VIEWS)) {
    const b = document.createElement('button'); b.textContent = label; b.dataset.view = view;
    b.onclick = () => { if (state.view !== view) closeDetail(); state.view = view; writeHash(); refresh(); };
    nav.appendChild(b);
  }
  readHash();
  window.addEventListener('hashchange', () => { readHash(); drawn.key = null; refresh(); });
  let typing;
  $('#filter').oninput = () => {
    clearTimeout(typing);
    typing = setTimeout(() => { state.filter = $('#filter').value.trim(); writeHash(); refresh(); }, 150);
  };
  $('#detail-close').onclick = () => { closeDetail(); writeHash(); };
  $('#detail-format').onchange = drawBody;
  $('#redrive-button').onclick = redrive;
  $('#purge').onclick = purge;
  initActions();
  if ($('#key').value) refresh().then(() => state.seq && showDetail(state.seq)); else status('Enter a key with the Manage right and press Connect.');
  setInterval(() => { if ($('#key').value && !document.hidden) refresh(); }, 2000);
}
init();
`;

/** The whole explorer page. */
export const EXPLORER_HTML = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>peeklock explorer</title><meta name="viewport" content="width=device-width">
<style>${STYLE}</style></head>
<body>
<header><h1>peeklock explorer</h1>
<label>Policy <input id="keyName" size="26" autocomplete="username"></label>
<label>Key <input id="key" type="password" size="20" autocomplete="current-password"></label>
<button id="connect">Connect</button>
<span id="refreshed"></span></header>
<main>
<div><input id="filter" type="search" placeholder="Filter by name" aria-label="Filter entities by name"> <span id="shown" class="muted"></span></div>
<div id="tree-pane"><table id="entities"><thead><tr><th>Entity</th><th class="num">Active</th><th class="num">Locked</th><th class="num">Scheduled</th>
<th class="num">Deferred</th><th class="num">Dead-lettered</th><th class="num">Bytes</th><th class="num">Consumers</th></tr></thead><tbody></tbody></table></div>
${ACTIONS_HTML}
<section id="charts">
${chartPanel('ns', 'Namespace (all entities summed)', '<div class="muted">Busiest in the last hour</div><ol id="busiest"></ol>')}
${chartPanel('entity', '')}
</section>
<h2 id="selected"></h2>
<nav></nav>
<div class="actions">
<span id="redrive" hidden><input id="reason" placeholder="only this DeadLetterReason (optional)" size="34"> <button id="redrive-button">Redrive to queue</button></span>
<button id="purge" class="danger">Purge</button>
</div>
${BULK_HTML}
<div id="status"></div>
${DETAIL_HTML}
<table id="messages"><thead><tr></tr></thead><tbody></tbody></table>
</main>
<script>${CHART_SCRIPT}${DETAIL_SCRIPT}${ACTIONS_SCRIPT}${SCRIPT}</script>
</body></html>
`;
