// The explorer's message detail (GET /api/message): every system property under the SDK's name, application
// properties with their types, the whole body as text, pretty JSON or hex, and who holds the lock for how
// much longer. Browser code in a string, like the rest of the page; it uses the page's `$`, `api`, `cell`,
// `utc`, `status`, `state` and `writeHash`. Values are inserted as text, never as HTML.

/** CSS for the detail section. */
export const DETAIL_STYLE = `
#detail { background: #fff; border: 1px solid #e3e6ea; padding: 8px 12px; margin-bottom: 14px; }
#detail h3 { margin: 0 0 8px; font-size: 15px; }
#detail .cols { display: flex; gap: 16px; flex-wrap: wrap; }
#detail table { width: auto; min-width: 320px; margin: 0; }
#detail th { width: 12em; }
#detail-body { max-height: 30em; background: #fbfcfd; border: 1px solid #eef1f4; padding: 6px; }
#detail-lock { margin: 8px 0; font-weight: 600; }
td.null { color: #9aa3ad; }
`;

/** The detail section, hidden until a message is clicked. */
export const DETAIL_HTML = `<section id="detail" hidden><h3><span id="detail-title"></span> <button id="detail-close">Close</button></h3>
<div class="cols"><table id="detail-system"><thead><tr><th colspan="2">System properties (SDK names)</th></tr></thead><tbody></tbody></table>
<div><table id="detail-app"><thead><tr><th>Application property</th><th>Type</th><th>Value</th></tr></thead><tbody></tbody></table>
<div id="detail-lock"></div>
<label>Body as <select id="detail-format"><option value="text">text</option><option value="json">JSON</option><option value="hex">hex</option></select></label></div></div>
<pre id="detail-body"></pre></section>`;

/** Browser code: `showDetail(seq)` and `closeDetail()`. */
export const DETAIL_SCRIPT = `const SYSTEM_KEYS = ['messageId', 'sequenceNumber', 'correlationId', 'sessionId', 'replyToSessionId', 'partitionKey',
  'contentType', 'subject', 'to', 'replyTo', 'timeToLive', 'enqueuedTimeUtc', 'scheduledEnqueueTimeUtc', 'expiresAtUtc',
  'lockedUntilUtc', 'deliveryCount', 'state', 'deadLetterReason', 'deadLetterErrorDescription', 'deadLetterSource', 'size'];
let detail = null;

function closeDetail() {
  state.seq = null; detail = null;
  $('#detail').hidden = true;
  for (const tr of document.querySelectorAll('tr.message.open')) tr.classList.remove('open');
}

async function showDetail(seq) {
  try {
    const r = await api('message?entity=' + encodeURIComponent(state.entity) + '&seq=' + seq + (state.view === 'deadletter' ? '&view=deadletter' : ''));
    detail = r.message;
    state.seq = seq; writeHash();
    for (const tr of document.querySelectorAll('tr.message')) tr.classList.toggle('open', Number(tr.dataset.seq) === seq);
    $('#detail-title').textContent = 'Message ' + seq + ' of ' + r.entity;
    const sys = $('#detail-system tbody'); sys.replaceChildren();
    for (const k of SYSTEM_KEYS) {
      const tr = document.createElement('tr'); tr.dataset.field = k;
      const th = document.createElement('th'); th.textContent = k; tr.appendChild(th);
      const v = detail[k];
      cell(tr, v === null || v === undefined ? 'null' : typeof v === 'object' ? JSON.stringify(v) : v, v === null ? 'null' : '');
      sys.appendChild(tr);
    }
    const app = $('#detail-app tbody'); app.replaceChildren();
    for (const [k, v] of Object.entries(detail.applicationProperties)) {
      const tr = document.createElement('tr'); tr.dataset.property = k;
      cell(tr, k); cell(tr, detail.applicationPropertyTypes[k] || typeof v).dataset.type = '1'; cell(tr, JSON.stringify(v));
      app.appendChild(tr);
    }
    if (!app.childElementCount) { const tr = document.createElement('tr'); cell(tr, 'none', 'muted').colSpan = 3; app.appendChild(tr); }
    const lock = $('#detail-lock');
    lock.textContent = r.lockRemainingMs === null ? 'Not locked.'
      : 'Locked by ' + (detail.lockHolder || 'an unknown receiver') + ' for ' + Math.ceil(r.lockRemainingMs / 1000) + ' s more (until ' + utc(detail.lockedUntilUtc) + ' UTC).';
    lock.dataset.remainingMs = r.lockRemainingMs === null ? '' : String(r.lockRemainingMs);
    const fmt = $('#detail-format');
    fmt.value = detail.bodyEncoding === 'base64' ? 'hex' : parsesAsJson(detail.body) ? 'json' : 'text';
    drawBody();
    $('#detail').hidden = false;
  } catch (err) { status(err.message, true); }
}

function parsesAsJson(text) { try { JSON.parse(text); return true; } catch { return false; } }

function bodyBytes() {
  if (detail.bodyEncoding === 'base64') return Uint8Array.from(atob(detail.body), (c) => c.charCodeAt(0));
  return new TextEncoder().encode(detail.body);
}

function drawBody() {
  if (!detail) return;
  const fmt = $('#detail-format').value;
  let text;
  if (fmt === 'hex') {
    const bytes = bodyBytes(), lines = [];
    for (let i = 0; i < bytes.length; i += 16) {
      const row = bytes.slice(i, i + 16);
      const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
      const ascii = Array.from(row, (b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : '.')).join('');
      lines.push(i.toString(16).padStart(8, '0') + '  ' + hex.padEnd(48) + ' ' + ascii);
    }
    text = lines.join('\\n');
  } else if (fmt === 'json') {
    text = parsesAsJson(detail.body) ? JSON.stringify(JSON.parse(detail.body), null, 2) : 'The body is not JSON.';
  } else {
    text = detail.bodyEncoding === 'base64' ? 'The body is binary; choose hex.' : detail.body;
  }
  $('#detail-body').textContent = text;
  $('#detail-body').dataset.format = fmt;
}
`;
