// The explorer's actions: a send form (body, content type, subject, ids, schedule, typed application
// properties), per-message Resubmit / Dead-letter / Delete buttons, bulk actions on the checked messages or
// on a filter (reason, subject, age, property) whose confirmation shows the count the broker reports for a
// dry run, and creating and deleting queues, topics and subscriptions through the management API (the ATOM
// routes the SDKs' administration clients use). Browser code in strings, like the rest of the page; it uses
// the page's `$`, `api`, `token`, `cell`, `status`, `state`, `refresh`, `select` and `closeDetail`. Values
// are inserted as text, never as HTML.

/** CSS for the action forms and buttons. */
export const ACTIONS_STYLE = `
details.tool { background: #fff; border: 1px solid #e3e6ea; padding: 6px 10px; margin: 8px 0; }
details.tool summary { cursor: pointer; font-weight: 600; }
.form { display: grid; grid-template-columns: max-content 1fr; gap: 4px 10px; margin-top: 8px; max-width: 760px; }
.form textarea { width: 100%; min-height: 4em; font: 12px ui-monospace, monospace; }
.props div { display: flex; gap: 4px; margin-bottom: 3px; }
td.acts { white-space: nowrap; }
td.acts button { padding: 1px 6px; font-size: 12px; margin-right: 2px; cursor: pointer; }
#bulk { display: flex; gap: 6px; align-items: center; flex-wrap: wrap; margin: 6px 0; }
#bulk input { padding: 3px 5px; }
`;

/** The send form, the entity form and the bulk bar. */
export const ACTIONS_HTML = `<details class="tool" id="send-panel"><summary>Send a message</summary>
<div class="form">
<label for="send-to">To (queue or topic)</label><input id="send-to" placeholder="queue or topic">
<label for="send-body">Body</label><textarea id="send-body"></textarea>
<label for="send-content-type">Content type</label><input id="send-content-type" placeholder="e.g. application/json">
<label for="send-subject">Subject</label><input id="send-subject">
<label for="send-message-id">Message id</label><input id="send-message-id" placeholder="a new one when empty">
<label for="send-session-id">Session id</label><input id="send-session-id">
<label for="send-correlation-id">Correlation id</label><input id="send-correlation-id">
<label for="send-schedule">Scheduled (UTC)</label><input id="send-schedule" placeholder="e.g. 2030-01-01T00:00:00Z">
<span>Application properties</span><div><div class="props" id="send-props"></div><button id="send-add-prop">Add property</button></div>
<span></span><div><button id="send-button">Send</button></div>
</div></details>
<details class="tool" id="entity-panel"><summary>Create or delete entities</summary>
<div class="form">
<label for="new-kind">Kind</label><select id="new-kind"><option value="queue">queue</option><option value="topic">topic</option><option value="subscription">subscription</option></select>
<label for="new-name">Name</label><input id="new-name" placeholder="name (a subscription: topic/Subscriptions/name or just name)">
<label for="new-topic">Topic</label><input id="new-topic" placeholder="the subscription's topic">
<span></span><div><button id="create-button">Create</button> <button id="delete-entity" class="danger">Delete the selected entity</button></div>
</div></details>`;

/** The bulk bar above the message table. */
export const BULK_HTML = `<div id="bulk"><span class="muted">Selection: the checked messages, or every one matching</span>
<input id="f-reason" placeholder="dead-letter reason" size="16"><input id="f-subject" placeholder="subject" size="12">
<input id="f-older" placeholder="older than (min)" size="12"><input id="f-property" placeholder="property key=value" size="16">
<button id="bulk-resubmit">Resubmit</button><button id="bulk-deadletter">Dead-letter</button><button id="bulk-delete" class="danger">Delete</button></div>`;

/** Browser code: send form, message actions, bulk actions and entity create/delete. */
export const ACTIONS_SCRIPT = `
const ACTION_VERBS = { resubmit: 'Resubmit', 'dead-letter': 'Dead-letter', delete: 'Delete' };
const TYPES = ['string', 'long', 'int', 'double', 'boolean', 'timestamp'];
function isSubscription(path) { return /\\/subscriptions\\//i.test(path || ''); }
function topicOf(path) { return path.slice(0, path.search(/\\/subscriptions\\//i)); }

function addPropRow() {
  const row = document.createElement('div');
  const name = document.createElement('input'); name.placeholder = 'name'; name.className = 'p-name';
  const type = document.createElement('select'); type.className = 'p-type';
  for (const t of TYPES) { const o = document.createElement('option'); o.value = t; o.textContent = t; type.appendChild(o); }
  const value = document.createElement('input'); value.placeholder = 'value'; value.className = 'p-value';
  const del = document.createElement('button'); del.textContent = '×'; del.title = 'remove'; del.onclick = () => row.remove();
  row.append(name, type, value, del);
  $('#send-props').appendChild(row);
  return row;
}

async function sendMessage() {
  const to = $('#send-to').value.trim();
  if (!to) return status('To: name a queue or topic.', true);
  const body = { body: $('#send-body').value };
  const fields = { contentType: '#send-content-type', subject: '#send-subject', messageId: '#send-message-id',
    sessionId: '#send-session-id', correlationId: '#send-correlation-id', scheduledEnqueueTimeUtc: '#send-schedule' };
  for (const [k, sel] of Object.entries(fields)) { const v = $(sel).value.trim(); if (v) body[k] = v; }
  const props = {};
  for (const row of document.querySelectorAll('#send-props > div')) {
    const name = row.querySelector('.p-name').value.trim();
    if (!name) continue;
    const type = row.querySelector('.p-type').value, raw = row.querySelector('.p-value').value;
    props[name] = { type, value: type === 'boolean' ? raw === 'true' : raw };
  }
  if (Object.keys(props).length) body.applicationProperties = props;
  try {
    const r = await api('entities/' + encodeURIComponent(to) + '/send', { method: 'POST', body: JSON.stringify(body) });
    status('Sent message ' + r.messageId + ' to ' + r.entity + '.');
  } catch (err) { status(err.message, true); }
  refresh();
}

// One action on a selection: a dry run first, so the confirmation names the count the broker will act on.
async function act(action, selection, what) {
  const path = 'entities/' + encodeURIComponent(state.entity) + '/' + action;
  const base = { view: state.view, ...selection };
  try {
    const dry = await api(path, { method: 'POST', body: JSON.stringify({ ...base, dryRun: true }) });
    // A filter looks at a bounded number of messages per request; its next says it stopped before the view's end.
    const reach = dry.next ? ' (among the first ' + dry.scanned + ' messages looked at; not searched from sequence number ' + dry.next + ' on)' : '';
    if (!dry.count) return status('No message matches' + reach + ': nothing to ' + ACTION_VERBS[action].toLowerCase() + '.');
    const where = action === 'resubmit' ? ' to ' + dry.to : action === 'dead-letter' ? ' to the dead-letter queue' : ' for good';
    if (!confirm(ACTION_VERBS[action] + ' ' + dry.count + ' message(s) ' + what + where + reach + '?')) return;
    const r = await api(path, { method: 'POST', body: JSON.stringify(base) });
    status(ACTION_VERBS[action] + ': ' + r.count + ' message(s) from ' + r.entity + (r.to ? ' to ' + r.to : '') +
      (r.skipped ? '; skipped ' + r.skipped + ' (gone or locked)' : '') + '.');
    closeDetail();
  } catch (err) { status(err.message, true); }
  refresh();
}

function checkedSeqs() { return [...document.querySelectorAll('#messages input.pick:checked')].map((c) => Number(c.value)); }

function bulk(action) {
  const seqs = checkedSeqs();
  if (seqs.length) return act(action, { sequenceNumbers: seqs }, '(the checked ones) of ' + state.entity);
  const filter = {};
  if ($('#f-reason').value.trim()) filter.reason = $('#f-reason').value.trim();
  if ($('#f-subject').value.trim()) filter.subject = $('#f-subject').value.trim();
  if ($('#f-older').value.trim()) filter.olderThanSeconds = Math.round(Number($('#f-older').value) * 60);
  if ($('#f-property').value.trim()) filter.property = $('#f-property').value.trim();
  const desc = Object.keys(filter).length ? 'matching ' + JSON.stringify(filter) : 'in the ' + VIEWS[state.view].toLowerCase() + ' view';
  return act(action, { filter }, desc + ' of ' + state.entity);
}

/** Header cells for the pick and action columns. */
function actionHead(head) {
  const pick = document.createElement('th'); pick.dataset.col = 'pick';
  const all = document.createElement('input'); all.type = 'checkbox'; all.title = 'check all';
  all.onclick = () => { for (const c of document.querySelectorAll('#messages input.pick')) c.checked = all.checked; };
  pick.appendChild(all); head.prepend(pick);
  const th = document.createElement('th'); th.textContent = 'Actions'; th.dataset.col = 'actions'; head.appendChild(th);
}

/** A message row's pick box and its Resubmit / Dead-letter / Delete buttons. */
function actionCells(tr, m) {
  const pick = document.createElement('td'); pick.dataset.col = 'pick';
  const box = document.createElement('input'); box.type = 'checkbox'; box.className = 'pick'; box.value = m.sequenceNumber;
  box.onclick = (ev) => ev.stopPropagation();
  pick.appendChild(box); tr.prepend(pick);
  const td = cell(tr, '', 'acts'); td.dataset.col = 'actions';
  const actions = state.view === 'deadletter' ? ['resubmit', 'delete'] : ['resubmit', 'dead-letter', 'delete'];
  for (const a of actions) {
    const btn = document.createElement('button'); btn.textContent = ACTION_VERBS[a]; btn.dataset.action = a;
    if (a === 'delete') btn.className = 'danger';
    btn.disabled = m.state === 'locked';
    if (btn.disabled) btn.title = 'locked by a receiver';
    btn.onclick = (ev) => { ev.stopPropagation(); act(a, { sequenceNumbers: [m.sequenceNumber] }, 'number ' + m.sequenceNumber + ' of ' + state.entity); };
    td.appendChild(btn);
  }
}

// Entities are made and removed through the management API the SDKs' administration clients use.
const ATOM_NS = 'http://schemas.microsoft.com/netservices/2010/10/servicebus/connect';
async function atom(method, path, kind) {
  const init = { method, headers: { authorization: await token() } };
  if (kind) {
    const tag = { queue: 'QueueDescription', topic: 'TopicDescription', subscription: 'SubscriptionDescription' }[kind];
    init.headers['content-type'] = 'application/atom+xml';
    init.body = '<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><' + tag + ' xmlns="' + ATOM_NS + '"/></content></entry>';
  }
  const res = await fetch('/' + path.split('/').map(encodeURIComponent).join('/') + '?api-version=2021-05', init);
  if (!res.ok) {
    const text = await res.text();
    const detail = /<Detail>([^<]*)<\\/Detail>/.exec(text);
    throw new Error(method + ' ' + path + ': HTTP ' + res.status + (detail ? ' — ' + detail[1] : ''));
  }
}

async function createEntity() {
  const kind = $('#new-kind').value;
  let name = $('#new-name').value.trim();
  if (!name) return status('Name: required.', true);
  if (kind === 'subscription' && !isSubscription(name)) {
    const topic = $('#new-topic').value.trim();
    if (!topic) return status('Topic: a subscription needs its topic.', true);
    name = topic + '/Subscriptions/' + name;
  }
  try {
    await atom('PUT', name, kind);
    status('Created ' + kind + ' ' + name + '.');
    select(name, 'active');
  } catch (err) { status(err.message, true); refresh(); }
}

async function deleteEntity() {
  const path = state.entity;
  if (!path) return status('Select an entity first.', true);
  const what = state.kind === 'topic' ? 'topic' : isSubscription(path) ? 'subscription' : 'queue';
  if (!confirm('Delete the ' + what + ' ' + path + ' and every message in it, for good?')) return;
  try {
    await atom('DELETE', path);
    status('Deleted ' + what + ' ' + path + '.');
    state.entity = null; closeDetail(); writeHash();
  } catch (err) { status(err.message, true); }
  refresh();
}

/** Fills the send form's target from the selection (a subscription sends through its topic). */
function syncActions() {
  const to = state.entity ? (isSubscription(state.entity) ? topicOf(state.entity) : state.entity) : '';
  if ($('#send-to').dataset.auto !== 'no') $('#send-to').value = to;
  $('#bulk').hidden = state.kind === 'topic' || !state.entity;
  $('#bulk-deadletter').hidden = state.view === 'deadletter';
  $('#f-reason').hidden = state.view !== 'deadletter';
}

function initActions() {
  $('#send-to').oninput = () => { $('#send-to').dataset.auto = 'no'; };
  $('#send-add-prop').onclick = addPropRow;
  $('#send-button').onclick = sendMessage;
  $('#create-button').onclick = createEntity;
  $('#delete-entity').onclick = deleteEntity;
  $('#bulk-resubmit').onclick = () => bulk('resubmit');
  $('#bulk-deadletter').onclick = () => bulk('dead-letter');
  $('#bulk-delete').onclick = () => bulk('delete');
}
`;
