// The dashboard's Faults tab: a button per field fault with its parameters
// (from GET /api/faults), and the chosen device's faults, active and past,
// its ground truth (GET /api/devices/{serial}/faults), each active one with
// a button that ends it. It uses app.js's helpers: $, el, api and state.
'use strict';

const faultsTab = {
  kinds: null, serial: '', busy: false,
  shown: '', // the device and list the table shows, as JSON
  reads: 0, // lists read, each shown or found shown already
};
window.senseboard.faults = faultsTab;

function faultsInfo(text, error) {
  const info = $('#faults-info');
  info.textContent = text;
  info.classList.toggle('error', !!error);
}

// faultForms builds a form per fault from the bridge's description.
async function faultForms() {
  if (faultsTab.kinds) return;
  faultsTab.kinds = await api('GET', 'api/faults');
  const forms = faultsTab.kinds.map((k) => {
    const inputs = k.params.map((p) => {
      let control;
      if (p.default === 'false') control = el('input', { type: 'checkbox', name: p.name });
      else if (p.name === 'mode') control = el('select', { name: p.name }, el('option', {}, 'silent'), el('option', {}, 'refuse'));
      else control = el('input', { name: p.name, placeholder: p.default || (p.name === 'for' ? '0s' : ''), size: 10 });
      return el('label', { title: p.help }, p.name + ' ', control);
    });
    const form = el('form', { class: 'fault', 'data-fault': k.fault },
      el('button', { class: 'primary' }, k.fault), ...inputs);
    form.addEventListener('submit', (e) => { e.preventDefault(); injectFault(form, k); });
    return form;
  });
  $('#fault-forms').replaceChildren(...forms);
}

async function injectFault(form, k) {
  const serial = state.current;
  if (!serial) return faultsInfo('Select a device first.', true);
  const body = { fault: k.fault };
  for (const p of k.params) {
    const c = form.elements[p.name];
    if (c.type === 'checkbox') { if (c.checked) body[p.name] = true; continue; }
    const v = c.value.trim();
    if (v === '') continue;
    body[p.name] = ['share', 'rate', 'value'].includes(p.name) ? Number(v) : v;
  }
  try {
    const r = await api('POST', `api/devices/${encodeURIComponent(serial)}/faults`, body);
    faultsInfo(`fault ${r.id} (${r.fault}) started`);
  } catch (e) {
    faultsInfo(e.message, true);
  }
  refreshFaults();
}

function stampText(s) { return s ? `${s.ms} ms, ${s.utc}` : ''; }

function paramsText(r) {
  const skip = new Set(['id', 'device', 'fault', 'start', 'end', 'origin', 'endedBy']);
  return Object.entries(r).filter(([k]) => !skip.has(k)).map(([k, v]) => `${k} ${v}`).join(', ');
}

// refreshFaults lists the chosen device's faults.
async function refreshFaults() {
  const serial = state.current;
  $('#faults-state').textContent = serial ? `Faults of device ${serial}` : 'Select a device.';
  if (!serial || faultsTab.busy) return;
  faultsTab.busy = true;
  try {
    const list = await api('GET', `api/devices/${encodeURIComponent(serial)}/faults`);
    faultsTab.serial = serial;
    faultsTab.list = list;
    // the table is built again only when the list changed: a row replaced
    // under the pointer would lose a click on its End button
    const shown = JSON.stringify([serial, list]);
    if (shown === faultsTab.shown) return;
    faultsTab.shown = shown;
    $('#faults tbody').replaceChildren(...list.slice().reverse().map((r) => el('tr', { 'data-id': r.id, class: r.end ? '' : 'active' },
      el('td', {}, String(r.id)), el('td', {}, r.fault), el('td', {}, paramsText(r)), el('td', {}, r.origin),
      el('td', {}, stampText(r.start)), el('td', {}, r.end ? stampText(r.end) : 'active'), el('td', {}, r.endedBy),
      el('td', {}, r.end ? '' : el('button', { onclick: () => endFault(serial, r.id) }, 'End')))));
  } catch (e) {
    faultsInfo(e.message, true);
  } finally {
    faultsTab.busy = false;
    faultsTab.reads++;
  }
}

async function endFault(serial, id) {
  try {
    const r = await api('DELETE', `api/devices/${encodeURIComponent(serial)}/faults/${id}`);
    faultsInfo(`fault ${r.id} (${r.fault}) ended`);
  } catch (e) {
    faultsInfo(e.message, true);
  }
  refreshFaults();
}

document.querySelector('#tabs [data-tab="faults"]').addEventListener('click', () => {
  faultForms().catch((e) => faultsInfo(e.message, true));
  refreshFaults();
});
setInterval(() => { if (!$('#tab-faults').hidden) refreshFaults(); }, 1000);
