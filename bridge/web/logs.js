// The dashboard's Logs tab: the chosen device's offline logs (list,
// download as SBEM, CSV, JSON or EDF+, preview, erase) and its data logger
// (start with a configuration of paths, stop), through the bridge's
// /api/devices/{serial}/logs calls. It uses app.js's helpers: $, el, api,
// download, state and token.
'use strict';

const logsTab = {
  serial: '', // the device the tab shows
  busy: false,
  listing: null, // the last GET /api/devices/{serial}/logs
  ticks: 0, // rounds of the timer below, each done with what it read
};
window.senseboard.logs = logsTab;

function logsInfo(text, error) {
  const info = $('#logs-info');
  info.textContent = text;
  info.classList.toggle('error', !!error);
}

function sizeText(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} kB`;
  return `${(n / 1024 / 1024).toFixed(2)} MB`;
}

// refreshLogs lists the chosen device's logs and its data logger's state.
async function refreshLogs() {
  const serial = state.current;
  const status = $('#logs-state');
  if (!serial) {
    logsTab.serial = '';
    logsTab.listing = null;
    status.textContent = 'Select a connected device.';
    $('#logs tbody').replaceChildren();
    return;
  }
  if (logsTab.busy) return;
  logsTab.busy = true;
  try {
    showLogs(await api('GET', `api/devices/${serial}/logs`));
  } catch (e) {
    logsTab.serial = serial;
    logsTab.listing = null;
    status.textContent = `Device ${serial}: ${e.message}`;
    status.classList.add('error');
  } finally {
    logsTab.busy = false;
  }
}

function showLogs(l) {
  logsTab.serial = l.device;
  logsTab.listing = l;
  const status = $('#logs-state');
  status.classList.remove('error');
  const total = l.logs.reduce((n, e) => n + e.size, 0);
  status.textContent = `Device ${l.device}: data logger ${l.stateName}` +
    (l.paths.length ? ` (${l.paths.join(', ')})` : ', nothing configured') +
    ` · ${l.logs.length} log${l.logs.length === 1 ? '' : 's'}, ${sizeText(total)}` +
    (l.open ? ' · a log is open' : '') + (l.full ? ' · the storage is full: logging stopped' : '');
  status.dataset.state = l.stateName;
  const rows = l.logs.slice().reverse().map((e) => el('tr', { 'data-log': e.id },
    el('td', {}, `#${e.id}`),
    el('td', { title: e.modified }, new Date(e.modified).toLocaleString()),
    el('td', { title: `${e.size} bytes` }, sizeText(e.size)),
    el('td', {}, ['sbem', 'csv', 'json', 'edf'].map((f) => {
      const name = `${l.device}-log${e.id}.${f}`;
      return el('a', { href: e.downloads[f], download: name, 'data-format': f,
        onclick: token ? (ev) => { ev.preventDefault(); download(e.downloads[f], name); } : undefined },
      f === 'edf' ? 'EDF+' : f.toUpperCase());
    })),
    el('td', {}, el('button', { type: 'button', 'data-preview': e.id, onclick: () => previewLog(l.device, e.id) }, 'Preview'), ' ',
      el('button', { type: 'button', 'data-delete': e.id, title: 'erase this log', onclick: (ev) => deleteLog(ev.target, e.id) }, 'Delete'))));
  $('#logs tbody').replaceChildren(...(rows.length ? rows :
    [el('tr', {}, el('td', { colspan: 5, class: 'hint' }, 'No logs. Start logging to make one.'))]));
}

// previewLog shows what a log holds, decoded by the bridge.
async function previewLog(serial, id) {
  const box = $('#log-preview');
  box.replaceChildren(el('p', { class: 'hint' }, `Reading log #${id}…`));
  try {
    const p = await api('GET', `api/devices/${serial}/logs/${id}/preview`);
    const ms = (v) => (v === undefined || v === null ? '—' : `${(v / 1000).toFixed(3)} s`);
    box.replaceChildren(
      el('h3', {}, `Log #${p.id}: ${sizeText(p.size)}, ${p.records} records`),
      el('table', { 'data-streams': '' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Stream'), el('th', {}, 'Records'), el('th', {}, 'Values'), el('th', {}, 'Device time'))),
        el('tbody', {}, p.streams.map((s) => el('tr', { 'data-stream': s.stream },
          el('td', {}, s.stream), el('td', {}, String(s.records)),
          el('td', {}, s.fields.map((f) => `${f.name} ${f.values}`).join(', ')),
          el('td', {}, `${ms(s.first)} – ${ms(s.last)}`))))),
      el('p', { class: 'hint' }, `The first ${p.head.length} records:`),
      el('pre', { 'data-head': '' }, p.head.map((r) => JSON.stringify(r)).join('\n')));
  } catch (e) {
    box.replaceChildren(el('p', { class: 'note' }, e.message));
  }
}

// logsCall runs a call that changes something and shows the listing it
// answers with, or the device's reason for refusing.
async function logsCall(method, path, body, done) {
  const serial = state.current;
  if (!serial) { logsInfo('Select a connected device first.', true); return; }
  logsInfo('…');
  try {
    showLogs(await api(method, `api/devices/${serial}/${path}`, body));
    logsInfo(done);
  } catch (e) {
    logsInfo(e.message, true);
  }
}

// deleteLog erases one log on the second click of its button: the first
// asks.
function deleteLog(button, id) {
  if (!button.classList.contains('danger')) {
    button.classList.add('danger');
    button.textContent = `Really delete #${id}?`;
    setTimeout(() => { button.classList.remove('danger'); button.textContent = 'Delete'; }, 5000);
    return;
  }
  logsCall('DELETE', `logs/${id}`, undefined, `Log #${id} is erased.`);
}

$('#logging').onsubmit = (e) => {
  e.preventDefault();
  const paths = e.target.paths.value.split('\n').map((s) => s.trim()).filter(Boolean);
  logsCall('POST', 'logging', { paths }, 'Logging started.');
};
$('#logging-stop').onclick = () => logsCall('POST', 'logging/stop', undefined, 'Logging stopped; the log is closed.');
$('#logs-refresh').onclick = refreshLogs;
$('#logs-delete').onclick = () => {
  const n = logsTab.listing ? logsTab.listing.logs.length : 0;
  $('#logs-confirm').firstChild.textContent = `Erase ${n === 1 ? 'the log' : `all ${n} logs`} of device ${state.current}? `;
  $('#logs-confirm').hidden = false;
};
$('#logs-delete-no').onclick = () => { $('#logs-confirm').hidden = true; };
$('#logs-delete-yes').onclick = async () => {
  $('#logs-confirm').hidden = true;
  $('#log-preview').replaceChildren();
  await logsCall('DELETE', 'logs', undefined, 'Every log is erased.');
};

// The tab reads the device when it is shown, when another device is
// chosen and on every action; by itself it reads again only while
// something changes there: every 2 s while the data logger logs (the log
// grows), and then only while the page and the tab are in sight and the
// device is connected. Reading is a use of the device: an open tab does
// not keep it in use while nothing changes, nor connect it again once the
// bridge has released it; Refresh reads (and connects) again.
$('#tabs button[data-tab="logs"]').addEventListener('click', refreshLogs);
setInterval(async () => {
  try {
    if ($('#tab-logs').hidden || document.visibilityState !== 'visible') return;
    if (logsTab.serial !== state.current) {
      $('#log-preview').replaceChildren();
      await refreshLogs();
    } else if (logsTab.listing && logsTab.listing.stateName === 'LOGGING' && state.devices.get(state.current)?.connected) {
      await refreshLogs();
    }
  } finally {
    logsTab.ticks++;
  }
}, 2000);
