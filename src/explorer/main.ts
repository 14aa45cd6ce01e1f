// The explorer page's entry: the key form, the view buttons, the filter, redrive and purge, and the refresh
// loop (every 2 s while the tab is visible). The page loads nothing from elsewhere, so it works offline.

import { forgetToken, post } from './api.js';
import { closeDetail, drawBody, showDetail } from './detail.js';
import { loadCharts } from './charts.js';
import { $, messageOf, status, valueOf } from './dom.js';
import { initActions } from './actions.js';
import { loadMessages } from './messages.js';
import { readHash, setRefresh, state, VIEWS, writeHash, type View } from './state.js';
import { loadEntities, redrawTree } from './tree.js';

let busy = false, again = false;

// One refresh at a time; a click or hash change during one is not lost: it runs once more after.
async function refresh(): Promise<void> {
  if (busy) {
    again = true;
    return;
  }
  busy = true;
  // Timed as a User Timing measure, which the browser's performance panel (and the page's tests) read.
  const started = performance.now();
  try {
    await loadEntities();
    await Promise.all([loadMessages(), loadCharts()]);
    if ($('#status').className === 'error') status('');
    // Set only when both loads succeeded: after an error it shows how old the figures on the page are.
    const now = new Date();
    const refreshed = $('#refreshed');
    refreshed.textContent = 'Last refreshed ' + now.toISOString().slice(11, 19) + ' UTC';
    refreshed.dataset.at = now.toISOString();
    performance.clearMeasures('explorer refresh'); // only the last one: a tab may stay open for days
    performance.measure('explorer refresh', { start: started });
  } catch (err) {
    status(messageOf(err), true);
  } finally {
    busy = false;
    if (again) {
      again = false;
      void refresh();
    }
  }
}

async function redrive(): Promise<void> {
  const reason = valueOf('#reason').trim();
  const what = 'Redrive ' + (reason ? 'dead letters with reason "' + reason + '"' : 'every dead letter') + ' of ' + state.entity +
    ' back to the queue? They will be delivered again: the consumer must be idempotent.';
  if (!confirm(what)) return;
  try {
    const r = await post<{ moved: number; skipped: number; failed: number }>('entities/' + encodeURIComponent(state.entity ?? '') + '/redrive', reason ? { reason } : {});
    status('Redrive: moved ' + r.moved + ', skipped ' + r.skipped + ', failed ' + r.failed + '.');
  } catch (err) {
    status(messageOf(err), true);
  }
  await refresh();
}

async function purge(): Promise<void> {
  const what = state.view === 'deadletter' ? 'the dead-letter queue of ' + state.entity : 'every message of ' + state.entity;
  if (!confirm('Delete ' + what + ' for good?')) return;
  try {
    const r = await post<{ purged: number; entity: string }>('entities/' + encodeURIComponent(state.entity ?? '') + '/purge', { view: state.view });
    status('Purged ' + r.purged + ' message(s) from ' + r.entity + '.');
  } catch (err) {
    status(messageOf(err), true);
  }
  await refresh();
}

function init(): void {
  setRefresh(refresh);
  const keyName = $<HTMLInputElement>('#keyName'), key = $<HTMLInputElement>('#key');
  keyName.value = sessionStorage.getItem('peeklock.keyName') || 'RootManageSharedAccessKey';
  key.value = sessionStorage.getItem('peeklock.key') || '';
  $('#connect').onclick = () => {
    sessionStorage.setItem('peeklock.keyName', keyName.value);
    sessionStorage.setItem('peeklock.key', key.value);
    forgetToken();
    status('');
    void refresh();
  };
  const nav = $('nav');
  for (const [view, label] of Object.entries(VIEWS) as [View, string][]) {
    const b = document.createElement('button');
    b.textContent = label;
    b.dataset.view = view;
    b.onclick = () => {
      if (state.view !== view) closeDetail();
      state.view = view;
      writeHash();
      void refresh();
    };
    nav.appendChild(b);
  }
  readHash();
  window.addEventListener('hashchange', () => {
    readHash();
    redrawTree();
    void refresh();
  });
  let typing: ReturnType<typeof setTimeout> | undefined;
  $('#filter').oninput = () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      state.filter = valueOf('#filter').trim();
      writeHash();
      void refresh();
    }, 150);
  };
  $('#detail-close').onclick = () => {
    closeDetail();
    writeHash();
  };
  $('#detail-format').onchange = drawBody;
  $('#redrive-button').onclick = redrive;
  $('#purge').onclick = purge;
  initActions();
  // A shared link may name an open message (#…&seq=N): open it once the view is drawn.
  if (key.value) void refresh().then(() => (state.seq ? showDetail(state.seq) : undefined));
  else status('Enter a key with the Manage right and press Connect.');
  setInterval(() => {
    if (key.value && !document.hidden) void refresh();
  }, 2000);
}

init();
