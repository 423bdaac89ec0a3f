// The dashboard of the senseboard bridge: devices, live plots, resource
// forms generated from the interface definitions, and recordings (the Logs
// tab is logs.js, which uses the helpers here). It talks
// to the bridge's API only: /api/ws for messages, /api/* for the rest.
'use strict';

const params = new URLSearchParams(location.hash.slice(1) || location.search.slice(1));
const token = params.get('token') || '';

const state = { devices: new Map(), current: '', ws: null, nextId: 1, pending: new Map(), subs: new Map() };
// window.senseboard is for tests and the curious: points received per stream.
window.senseboard = { points: {}, lost: {}, state };

const $ = (sel, root = document) => root.querySelector(sel);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k);
  return e;
};

// ---- the bridge's API

async function api(method, path, body) {
  const headers = {};
  if (token) headers.Authorization = 'Bearer ' + token;
  // the bridge takes calls that change things as JSON only, even without a body
  if (method !== 'GET') headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await r.json();
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}

function connectSocket() {
  const u = new URL('api/ws', location.href);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  if (token) u.searchParams.set('token', token);
  const ws = new WebSocket(u);
  state.ws = ws;
  ws.onopen = () => setLink('connected', 'ok');
  ws.onclose = () => {
    setLink('disconnected, retrying…', 'off');
    for (const p of state.pending.values()) p.reject(new Error('the bridge connection closed'));
    state.pending.clear();
    for (const s of state.subs.values()) s.ended('the bridge connection closed');
    state.subs.clear();
    setTimeout(connectSocket, 1000);
  };
  ws.onmessage = (e) => receive(JSON.parse(e.data));
}

function setLink(text, cls) {
  const b = $('#link');
  b.textContent = 'bridge ' + text;
  b.className = 'badge ' + cls;
}

// send sends a message and resolves with the response (the envelope).
function send(msg) {
  return new Promise((resolve, reject) => {
    if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return reject(new Error('the bridge is not connected'));
    msg.id = msg.id || 'd' + state.nextId++;
    state.pending.set(msg.id, { resolve, reject });
    state.ws.send(JSON.stringify(msg));
  });
}

function receive(m) {
  switch (m.type) {
    case 'device':
      updateDevice(m.device);
      break;
    case 'response':
    case 'error': {
      const p = state.pending.get(m.id);
      if (!p) return;
      state.pending.delete(m.id);
      if (m.type === 'error') p.reject(new Error(m.error));
      else p.resolve(m);
      break;
    }
    case 'notification':
      state.subs.get(m.id)?.data(m.content);
      break;
    case 'ended': {
      const s = state.subs.get(m.id);
      state.subs.delete(m.id);
      s?.ended(m.reason);
      break;
    }
  }
}

// subscribe subscribes on the current device; handler gets data(content)
// and ended(reason). It resolves with the id, or rejects with the reason.
async function subscribe(path, handler, value) {
  const id = 's' + state.nextId++;
  state.subs.set(id, handler);
  let r;
  try {
    r = await send({ type: 'subscribe', path, id, device: state.current, value });
  } catch (e) {
    state.subs.delete(id);
    throw e;
  }
  if (r.response < 200 || r.response > 299) {
    state.subs.delete(id);
    throw new Error(`${r.response} ${r.responsestring}${r.error ? ': ' + r.error : ''}`);
  }
  return id;
}

async function unsubscribe(id) {
  if (!state.subs.delete(id)) return;
  try { await send({ type: 'unsubscribe', id }); } catch (e) { /* the subscription ended already */ }
}

// ---- devices

// goneListed is how long the bridge lists a device that went away (the
// phone's GoneListed): the list shows it gone, and why, as long.
const goneListed = 60000;

function updateDevice(d) {
  const was = state.devices.get(d.serial);
  state.devices.set(d.serial, d);
  if (d.state === 'gone') {
    setTimeout(() => {
      if (state.devices.get(d.serial) === d) { state.devices.delete(d.serial); renderDevices(); }
    }, goneListed);
  }
  if (d.serial === state.current && d.connected && !was?.connected) refreshBattery();
  if (!state.devices.has(state.current) || !state.devices.get(state.current).connected) {
    const first = [...state.devices.values()].find((x) => x.connected);
    if (first && first.serial !== state.current) select(first.serial);
  }
  renderDevices();
}

// select chooses a device; choosing one that is not connected connects to
// it (the bridge connects to devices when a client uses them).
function select(serial) {
  const d = state.devices.get(serial);
  if (d?.state === 'gone') return;
  if (d && !d.connected && d.advertising) {
    api('POST', `api/devices/${serial}/connect`).catch((e) => { $('#current').textContent = `Device ${serial}: ${e.message}`; });
  }
  if (serial === state.current) return;
  stopAllStreams();
  state.current = serial;
  document.querySelectorAll('[data-readout]').forEach((c) => { c.textContent = '—'; });
  refreshBattery();
  $('#current').textContent = serial ? `Device ${serial}` : 'Select a connected device.';
  if (!$('#tab-resources').hidden) loadDefinitions().catch((e) => { $('#resource').textContent = e.message; });
  renderDevices();
}

const spaced = (hex) => hex.replace(/(..)(?!$)/g, '$1 ');

function badge(text, cls) { return el('span', { class: 'badge ' + (cls || '') }, text); }

function renderDevices() {
  const ul = $('#devices');
  ul.replaceChildren();
  const devs = [...state.devices.values()].sort((a, b) => a.serial.localeCompare(b.serial));
  if (devs.length === 0) ul.append(el('li', { class: 'empty' }, 'No devices seen yet. Scanning…'));
  for (const d of devs) {
    const stateCls = d.connected ? 'ok' : d.advertising ? 'warn' : 'off';
    const li = el('li', { class: d.serial === state.current ? 'selected' : '', 'data-serial': d.serial, onclick: () => select(d.serial) },
      el('div', { class: 'title' }, el('span', {}, d.name || d.serial), badge(d.state, stateCls)),
      el('div', { class: 'flags' },
        badge(d.local ? 'this program' : 'over the air'),
        d.address ? badge(d.address) : null,
        d.passKey ? badge('pass key', d.encrypted ? 'ok' : 'warn') : null,
        d.encrypted ? badge('encrypted', 'ok') : null,
        d.bonded ? badge('bonded', 'ok') : null,
        d.hrs ? badge('HRS') : null),
      // a release after the idle period is a normal state (docs/bridge.md: "released: ..."), not a failure
      d.note ? el('div', { class: d.note.startsWith('released: ') ? 'note normal' : 'note' }, d.note) : null,
      d.adv ? el('details', { onclick: (e) => e.stopPropagation() }, el('summary', { class: 'hint' }, 'advertisement'),
        el('code', { class: 'hex' }, spaced(d.adv)), el('code', { class: 'hex' }, spaced(d.scanResp))) : null,
      d.streams.length ? el('div', { class: 'hint' }, d.streams.length + ' stream(s) open') : null,
      d.state === 'gone' ? null : deviceActions(d));
    ul.append(li);
  }
}

function deviceActions(d) {
  const run = (f) => async (e) => {
    e.stopPropagation();
    try { await f(); } catch (err) { alert(err.message); }
  };
  const box = el('div', { class: 'actions', onclick: (e) => e.stopPropagation() });
  if (d.connected) {
    box.append(el('button', { onclick: run(() => api('POST', `api/devices/${d.serial}/disconnect`)) }, 'Disconnect'));
  } else {
    box.append(el('button', { class: 'primary', onclick: run(() => api('POST', `api/devices/${d.serial}/connect`)) }, 'Connect'));
  }
  if (!d.encrypted) {
    const key = el('input', { type: 'text', placeholder: 'pass key', maxlength: 6, 'aria-label': 'pass key' });
    const bond = el('input', { type: 'checkbox', checked: true });
    box.append(key, el('label', {}, bond, ' bond'),
      el('button', { onclick: run(() => api('POST', `api/devices/${d.serial}/pair`, { passKey: key.value, bond: bond.checked })) }, 'Pair'));
  }
  return box;
}

// ---- live plots

const axes3 = (unit) => ({ series: ['x', 'y', 'z'], unit, colors: ['#d92d20', '#1a7f37', '#2456c7'] });
const kinds = {
  ecg: { window: 5, path: (r) => `/Meas/ECG/${r}/mV`, ...{ series: ['ECG'], unit: 'mV', colors: ['#d92d20'] }, counted: true,
    points: (c, r) => samples(c.Timestamp, r, c.Samples.map((v) => [v])) },
  acc: { window: 10, path: (r) => `/Meas/Acc/${r}`, ...axes3('m/s²'), counted: true, points: (c, r) => samples(c.Timestamp, r, xyz(c.ArrayAcc)) },
  gyro: { window: 10, path: (r) => `/Meas/Gyro/${r}`, ...axes3('°/s'), counted: true, points: (c, r) => samples(c.Timestamp, r, xyz(c.ArrayGyro)) },
  magn: { window: 10, path: (r) => `/Meas/Magn/${r}`, ...axes3('µT'), counted: true, points: (c, r) => samples(c.Timestamp, r, xyz(c.ArrayMagn)) },
  temp: { window: 600, path: () => '/Meas/Temp', series: ['°C'], unit: '°C', colors: ['#b54708'], dots: true,
    points: (c) => {
      readout('temp', `${(c.Measurement - 273.15).toFixed(1)} °C`);
      return [[c.Timestamp / 1000, [c.Measurement - 273.15]]];
    } },
  hr: { window: 120, path: () => '/Meas/HR', series: ['HR bpm', 'RR ms'], unit: 'bpm', colors: ['#d92d20', '#2456c7'], twoScales: true, dots: true,
    // HR notifications carry no time: each beat sits at the device time of
    // the subscription (GET /Time/Detailed) plus the RR intervals since.
    points: (c, r, stream) => {
      if (c.average) readout('hr', `${Math.round(c.average)} bpm`);
      if (c.rrData.length) readout('rr', `${c.rrData[c.rrData.length - 1]} ms`);
      if (!c.rrData.length) return [[stream.clock, [c.average || null, null]]];
      return c.rrData.map((v) => {
        stream.clock += v / 1000;
        return [stream.clock, [c.average || null, v]];
      });
    } },
};
const xyz = (arr) => arr.map((s) => [s.x, s.y, s.z]);
function samples(ts, rate, rows) { return rows.map((row, i) => [ts / 1000 + i / rate, row]); }

// lostBetween counts the samples missing before a notification whose first
// sample is at ts ms, when the next was due at expected ms, at rate Hz.
function lostBetween(expected, ts, rate) {
  if (expected === undefined || !(rate > 0)) return 0;
  const n = Math.round((ts - expected) * rate / 1000);
  return n > 0 ? n : 0;
}
window.senseboard.lostBetween = lostBetween;

function readout(name, text) {
  const cell = document.querySelector(`[data-readout="${name}"]`);
  if (cell) cell.textContent = text;
}

class LiveStream {
  constructor(root) {
    this.root = root;
    this.kind = root.dataset.stream;
    this.spec = kinds[this.kind];
    this.id = '';
    this.button = $('[data-toggle]', root);
    this.info = $('[data-info]', root);
    this.rate = $('[data-rate]', root);
    this.button.onclick = () => (this.id ? this.stop() : this.start());
    window.senseboard.points[this.kind] = 0;
  }

  async start() {
    if (!state.current) return alert('Select a connected device first.');
    const rate = this.rate ? Number(this.rate.value) : 0;
    this.reset(rate);
    this.button.disabled = true;
    try {
      if (this.kind === 'hr') {
        const t = await send({ type: 'get', path: '/Time/Detailed', device: state.current });
        this.clock = t.response === 200 ? t.content.relativeTime / 1000 : 0;
      }
      this.id = await subscribe(this.spec.path(rate), this);
      this.button.textContent = 'Stop';
      this.info.textContent = 'waiting for data…';
    } catch (e) {
      this.info.textContent = e.message;
    }
    this.button.disabled = false;
  }

  stop() {
    const id = this.id;
    this.id = '';
    this.button.textContent = 'Start';
    if (id) unsubscribe(id);
  }

  ended(reason) {
    this.id = '';
    this.button.textContent = 'Start';
    this.info.textContent = 'ended: ' + reason;
  }

  reset(rate) {
    this.rateHz = rate;
    this.x = [];
    this.ys = this.spec.series.map(() => []);
    this.count = 0;
    this.lost = 0;
    this.next = undefined;
    window.senseboard.lost[this.kind] = 0;
    const box = $('[data-plot]', this.root);
    box.replaceChildren();
    const series = [{}].concat(this.spec.series.map((label, i) => ({ label, stroke: this.spec.colors[i], width: 1.2,
      scale: this.spec.twoScales && i === 1 ? 'b' : 'y', points: { show: !!this.spec.dots } })));
    const axes = [{ label: 'device time, s' }, { label: this.spec.unit, scale: 'y' }];
    if (this.spec.twoScales) axes.push({ side: 1, scale: 'b', label: 'ms', grid: { show: false } });
    this.plot = new uPlot({ width: Math.max(300, box.clientWidth || 600), height: 180, series, axes,
      scales: { x: { time: false } }, legend: { live: false } }, [this.x, ...this.ys], box);
  }

  data(content) {
    const pts = this.spec.points(content, this.rateHz, this);
    if (this.spec.counted && typeof content.Timestamp === 'number') {
      this.lost += lostBetween(this.next, content.Timestamp, this.rateHz);
      this.next = content.Timestamp + pts.length * 1000 / this.rateHz;
      window.senseboard.lost[this.kind] = this.lost;
    }
    for (const [t, row] of pts) {
      this.x.push(t);
      row.forEach((v, i) => this.ys[i].push(v));
    }
    this.count += pts.length;
    window.senseboard.points[this.kind] += pts.length;
    const last = this.x[this.x.length - 1];
    let cut = 0;
    while (cut < this.x.length && this.x[cut] < last - this.spec.window) cut++;
    if (cut > 0) {
      this.x.splice(0, cut);
      this.ys.forEach((y) => y.splice(0, cut));
    }
    this.info.textContent = `${this.count} points` + (this.spec.counted ? `, ${this.lost} lost` : '');
    if (!this.dirty) {
      this.dirty = true;
      requestAnimationFrame(() => {
        this.dirty = false;
        this.plot.setData([this.x, ...this.ys]);
      });
    }
  }
}

const stateNames = ['Movement', 'Battery low', 'Connectors', 'Double tap', 'Tap', 'Free fall'];

class StatesStream {
  constructor(root) {
    this.root = root;
    this.ids = [];
    this.button = $('[data-toggle]', root);
    this.info = $('[data-info]', root);
    this.body = $('[data-states]', root);
    this.button.onclick = () => (this.ids.length ? this.stop() : this.start());
    window.senseboard.points.states = 0;
  }

  async start() {
    if (!state.current) return alert('Select a connected device first.');
    this.body.replaceChildren();
    this.values = [];
    this.cells = stateNames.map((name) => {
      const cell = el('td', {}, '…');
      this.body.append(el('tr', {}, el('td', {}, name), cell));
      return cell;
    });
    this.button.textContent = 'Stop';
    for (let i = 0; i < stateNames.length; i++) {
      const cell = this.cells[i];
      try {
        const r = await send({ type: 'get', path: `/System/States/${i}`, device: state.current });
        cell.textContent = r.response === 200 ? String(r.content) : `${r.response} ${r.error || r.responsestring}`;
        if (r.response === 200) { this.values[i] = r.content; this.showReadout(); }
        this.ids.push(await subscribe(`/System/States/${i}`, {
          data: (c) => {
            cell.textContent = `${c.NewState} (at ${c.Timestamp} ms)`;
            this.values[i] = c.NewState;
            this.showReadout();
            window.senseboard.points.states++;
          },
          ended: (reason) => { cell.textContent = 'ended: ' + reason; },
        }));
      } catch (e) {
        cell.textContent = e.message;
      }
    }
  }

  showReadout() {
    const on = stateNames.filter((_, i) => this.values[i]);
    readout('states', on.length ? on.join(', ') : 'none');
  }

  stop() {
    this.ids.forEach(unsubscribe);
    this.ids = [];
    this.button.textContent = 'Start';
  }
}

// DebugConsole shows /System/Debug/{Level}: messages of the level chosen
// and above. Starting it turns on the device's and apps' messages in
// /System/Debug/Config, which are off by default.
class DebugConsole {
  constructor(root) {
    this.root = root;
    this.id = '';
    this.button = $('[data-toggle]', root);
    this.info = $('[data-info]', root);
    this.level = $('[data-level]', root);
    this.out = $('[data-console]', root);
    this.button.onclick = () => (this.id ? this.stop() : this.start());
    window.senseboard.points.debug = 0;
  }

  async start() {
    if (!state.current) return alert('Select a connected device first.');
    this.out.hidden = false;
    this.lines = [];
    this.out.textContent = '';
    try {
      const cfg = await send({ type: 'get', path: '/System/Debug/Config', device: state.current });
      if (cfg.response === 200 && !(cfg.content.SystemMessages && cfg.content.DebugMessages)) {
        await send({ type: 'put', path: '/System/Debug/Config', device: state.current,
          value: { SystemMessages: true, DebugMessages: true } });
        this.info.textContent = 'turned the device\'s and apps\' messages on (/System/Debug/Config); ';
      } else {
        this.info.textContent = '';
      }
      this.id = await subscribe(`/System/Debug/${this.level.value}`, this);
      this.button.textContent = 'Stop';
      this.info.textContent += `listening at ${this.level.value} and above`;
    } catch (e) {
      this.info.textContent = e.message;
    }
  }

  data(c) {
    const level = Array.isArray(c.Level) ? c.Level[1] : c.Level;
    this.lines.push(`${c.Timestamp} ms  ${level}  ${c.Message}`);
    if (this.lines.length > 200) this.lines.shift();
    this.out.textContent = this.lines.join('\n');
    this.out.scrollTop = this.out.scrollHeight;
    window.senseboard.points.debug++;
  }

  ended(reason) {
    this.id = '';
    this.button.textContent = 'Start';
    this.info.textContent = 'ended: ' + reason;
  }

  stop() {
    const id = this.id;
    this.id = '';
    this.button.textContent = 'Start';
    if (id) unsubscribe(id);
  }
}

const streams = [...document.querySelectorAll('.stream')].map((root) => {
  switch (root.dataset.stream) {
    case 'states': return new StatesStream(root);
    case 'debug': return new DebugConsole(root);
  }
  return new LiveStream(root);
});

function stopAllStreams() { streams.forEach((s) => s.stop()); }
window.senseboard.streams = streams;

// ---- resources: forms from the interface definitions

let definitions = [];
let definitionsOf = null; // the device whose definitions are shown; '' for the bridge's own

// loadDefinitions shows the chosen device's own definitions, with the
// resources its apps add (asking for them connects to the device), or the
// bridge's built-in ones while no device is chosen.
async function loadDefinitions() {
  const serial = state.current;
  const defs = await api('GET', serial ? `api/devices/${encodeURIComponent(serial)}/definitions` : 'api/definitions');
  if (serial !== state.current) return; // another device was chosen meanwhile
  definitions = defs;
  definitionsOf = serial;
  renderResourceList();
}

function renderResourceList() {
  const ul = $('#resources');
  const f = $('#filter').value.toLowerCase();
  ul.replaceChildren();
  let group = '';
  for (const r of definitions) {
    if (f && !r.path.toLowerCase().includes(f)) continue;
    if (r.group !== group) {
      group = r.group;
      ul.append(el('li', { class: 'group' }, group));
    }
    ul.append(el('li', { 'data-path': r.path, 'data-app': r.app, onclick: (e) => {
      ul.querySelectorAll('.selected').forEach((x) => x.classList.remove('selected'));
      e.currentTarget.classList.add('selected');
      renderResource(r);
    } }, r.path, r.app ? badge('app', 'app') : null));
  }
}

function renderResource(r) {
  const box = $('#resource');
  // replaceChildren would show a null as the text "null": leave out what is absent
  box.replaceChildren(...[el('h3', {}, r.path), r.app ? el('p', { class: 'hint' }, `Added by an app of the device (${r.file}).`) : null,
    r.description ? el('p', {}, r.description) : null].filter((k) => k !== null));
  for (const op of r.ops) box.append(opForm(r, op));
}

// input makes a field for a value of a schema or a parameter.
function input(p) {
  const enumv = p.enum || [];
  if (enumv.length) return el('select', {}, enumv.map((v) => el('option', { value: JSON.stringify(v) }, String(v))));
  if (p.type === 'boolean' || p.type === 'bool') return el('select', {}, el('option', { value: 'true' }, 'true'), el('option', { value: 'false' }, 'false'));
  const numeric = /int|number|float|double/.test(p.type || '');
  return el('input', { type: numeric ? 'number' : 'text', min: p.minimum, max: p.maximum, step: /int/.test(p.type) ? 1 : 'any' });
}

function readInput(e, type) {
  if (e.tagName === 'SELECT') return JSON.parse(e.value); // options hold JSON
  if (/int|number|float|double/.test(type || '')) return e.value === '' ? null : Number(e.value);
  return e.value;
}

function field(label, control, help) {
  return el('div', { class: 'field' }, el('label', {}, label), control, help ? el('small', {}, help) : null);
}

function bodyTemplate(schema) {
  if (!schema) return null;
  if (schema.enum) return schema.enum[0];
  switch (schema.type) {
    case 'object': case undefined: {
      const o = {};
      for (const [k, v] of Object.entries(schema.properties || {})) o[k] = bodyTemplate(v);
      return o;
    }
    case 'array': return [];
    case 'string': return '';
    case 'boolean': return false;
    default: return schema.minimum ?? 0;
  }
}

function opForm(r, op) {
  const form = el('form', { class: 'op' }, el('h4', {}, `${op.op.toUpperCase()} ${r.path}`),
    op.description ? el('p', { class: 'hint' }, op.description) : null);
  const controls = [];
  for (const p of op.params) {
    if (p.in === 'body' && (p.type === 'record' || p.type === 'json' || p.schema?.properties)) {
      const ta = el('textarea', { rows: 4 }, JSON.stringify(bodyTemplate(p.schema), null, 1));
      controls.push({ p, read: () => JSON.parse(ta.value) });
      form.append(field(`${p.name}${p.record ? ' (' + p.record + ')' : ''}`, ta, p.description));
    } else {
      const c = input(p);
      controls.push({ p, read: () => readInput(c, p.type) });
      const range = p.minimum !== undefined || p.maximum !== undefined ? ` ${p.minimum ?? ''}..${p.maximum ?? ''}` : '';
      form.append(field(`${p.name} (${p.in}, ${p.type}${range}${p.unit ? ', ' + p.unit : ''})`, c, p.description));
    }
  }
  const out = el('pre', { hidden: true });
  const sub = { id: '' };
  const button = el('button', { class: 'primary' }, op.op === 'subscribe' ? 'Subscribe' : 'Send');
  form.append(button, out);
  form.onsubmit = async (e) => {
    e.preventDefault();
    out.hidden = false;
    if (!state.current) { out.textContent = 'Select a connected device first.'; return; }
    if (sub.id) { unsubscribe(sub.id); sub.id = ''; button.textContent = 'Subscribe'; return; }
    let path = r.path;
    let value;
    // One body parameter is the value; several go in an object keyed by
    // their names (optional ones left empty are left out).
    const body = controls.filter(({ p }) => p.in !== 'path');
    try {
      for (const { p, read } of controls) {
        const v = read();
        if (p.in === 'path') path = path.replace(`{${p.name}}`, encodeURIComponent(v));
        else if (body.length === 1) value = v;
        else if (v !== null || p.required) (value ??= {})[p.name] = v;
      }
    } catch (err) {
      out.textContent = 'The body is not JSON: ' + err.message;
      return;
    }
    const msg = { type: op.op, path, device: state.current };
    if (value !== undefined) msg.value = value;
    try {
      if (op.op === 'subscribe') {
        const lines = [];
        sub.id = await subscribe(path, {
          data: (c) => {
            lines.push(JSON.stringify(c));
            if (lines.length > 20) lines.shift();
            out.textContent = lines.join('\n');
          },
          ended: (reason) => { out.textContent += '\nended: ' + reason; sub.id = ''; button.textContent = 'Subscribe'; },
        }, value);
        button.textContent = 'Unsubscribe';
        out.textContent = 'subscribed; waiting for notifications…';
      } else {
        out.textContent = JSON.stringify(await send(msg), null, 2);
      }
    } catch (err) {
      out.textContent = err.message;
    }
  };
  return form;
}

// ---- recordings

async function refreshRecordings() {
  const body = $('#recordings tbody');
  let recs = [];
  try { recs = await api('GET', 'api/recordings'); } catch (e) { return; }
  body.replaceChildren(...recs.reverse().map((r) => el('tr', {},
    el('td', {}, r.name), el('td', {}, r.streams.join('\n')), el('td', {}, String(r.notifications)),
    el('td', {}, (r.downloads || []).map((href, i) => el('div', {},
      el('a', { href, download: '', title: r.files[i], onclick: token ? (e) => { e.preventDefault(); download(href); } : undefined },
        href.split('/').pop()))),
      r.edf ? el('div', {}, el('a', { href: r.edf, download: '', 'data-edf': '', title: 'the recording as EDF+, made from its files',
        onclick: token ? (e) => { e.preventDefault(); download(r.edf); } : undefined }, `${r.name}.edf (EDF+)`)) : null,
      r.error ? el('div', { class: 'note' }, r.error) : null),
    el('td', {}, r.stopped ? 'stopped' : el('button', { onclick: async () => {
      try { await api('POST', `api/recordings/${encodeURIComponent(r.name)}/stop`); } catch (e) { alert(e.message); }
      refreshRecordings();
    } }, 'Stop')))));
}

// download saves a file of the bridge's API behind a token: the token goes
// in the Authorization header, which a plain link cannot send.
async function download(href, name) {
  try {
    const r = await fetch(href, { headers: { Authorization: 'Bearer ' + token } });
    if (!r.ok) throw new Error((await r.json()).error || r.statusText);
    const a = el('a', { href: URL.createObjectURL(await r.blob()), download: name || href.split('/').pop() });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  } catch (e) {
    alert(e.message);
  }
}

$('#record').onsubmit = async (e) => {
  e.preventDefault();
  const f = e.target;
  const paths = f.paths.value.split('\n').map((s) => s.trim()).filter(Boolean);
  try {
    await api('POST', 'api/recordings', { paths, format: f.format.value, name: f.name.value || undefined, device: state.current || undefined });
  } catch (err) {
    alert(err.message);
  }
  refreshRecordings();
};

// ---- device time and battery

// setTime puts this computer's clock into /Time (microseconds since 1970).
async function setTime() {
  const info = $('#settime-info');
  if (!state.current) { info.textContent = 'Select a connected device first.'; return; }
  const now = Date.now();
  try {
    const r = await send({ type: 'put', path: '/Time', value: now * 1000, device: state.current });
    info.textContent = r.response === 200 ? `set to ${new Date(now).toISOString()}` : `${r.response} ${r.error || r.responsestring}`;
  } catch (e) {
    info.textContent = e.message;
  }
}
$('#settime').onclick = setTime;

// refreshBattery reads the battery level where the device has one
// (/System/Energy/Level, percent), or else whether it is low (/System/States/1).
async function refreshBattery() {
  if (!state.devices.get(state.current)?.connected) return; // reading is a use: it would connect
  try {
    const r = await send({ type: 'get', path: '/System/Energy/Level', device: state.current });
    if (r.response === 200) { readout('battery', `${r.content} %`); return; }
    const low = await send({ type: 'get', path: '/System/States/1', device: state.current });
    if (low.response === 200) readout('battery', low.content ? 'low' : 'ok');
  } catch (e) { /* not connected */ }
}
setInterval(refreshBattery, 10000);

// While a device stays chosen, the page keeps using it, so that the bridge
// does not release the connection as idle (it does after a minute unused).
setInterval(() => {
  const d = state.devices.get(state.current);
  if (d && d.connected) api('POST', `api/devices/${d.serial}/connect`).catch(() => {});
}, 20000);

// ---- tabs and start

for (const b of document.querySelectorAll('#tabs button')) {
  b.onclick = () => {
    document.querySelectorAll('#tabs button').forEach((x) => x.classList.toggle('on', x === b));
    document.querySelectorAll('.tab').forEach((t) => { t.hidden = t.id !== 'tab-' + b.dataset.tab; });
    if (b.dataset.tab === 'resources' && definitionsOf !== state.current) loadDefinitions().catch((e) => { $('#resource').textContent = e.message; });
    if (b.dataset.tab === 'recordings') refreshRecordings();
  };
}
$('#filter').oninput = renderResourceList;
setInterval(() => { if (!$('#tab-recordings').hidden) refreshRecordings(); }, 1000);
connectSocket();
