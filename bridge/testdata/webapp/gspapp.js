// A small web app written as for the sensor family's real sensors: it finds a
// sensor with navigator.bluetooth, speaks the GATT SensorData Protocol
// (docs/gsp.md) over the GSP service's two characteristics, and reads the
// battery and heart rate services. It knows nothing of senseboard: the
// bridge's tests (webbluetooth_test.go) serve it from another origin with
// the bridge's script added, and drive it through window.app.
'use strict';

const GSP_SERVICE = '34802252-7185-4d5d-b431-630e7050e8f0';
const COMMAND = '34800001-7185-4d5d-b431-630e7050e8f0';
const DATA = '34800002-7185-4d5d-b431-630e7050e8f0';
const HELLO = 0, SUBSCRIBE = 1, UNSUBSCRIBE = 2, FETCH_LOG = 3, GET = 4, PUT_DATALOGGER_CONFIG = 6, PUT_DATALOGGER_STATE = 9;
const RESPONSE = 1, DATA_PART1 = 2;

// The chooser's filters of apps of the family: a name that begins with
// Movesense, the 16-bit services sensors advertise, or the GSP service.
const defaultRequest = {
  filters: [{ namePrefix: 'Movesense' }, { services: [0xfdf3] }, { services: ['heart_rate'] }, { services: [GSP_SERVICE] }],
  optionalServices: [GSP_SERVICE, 'battery_service'],
};

const out = document.querySelector('#out');
const say = (s) => { out.textContent += s + '\n'; };
const text = new TextDecoder();
const cstrings = (bytes) => text.decode(bytes).split('\0');
const zpath = (p) => [...new TextEncoder().encode(p), 0];
const base64 = (bytes) => {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
};

const app = {
  device: null, server: null, command: null, data: null,
  refs: 0,
  answers: new Map(), // ref -> resolve, for COMMAND_RESPONSE
  streams: new Map(), // ref -> function(code, bytes), for data
  disconnects: 0,

  async connect(request = defaultRequest) {
    this.device = await navigator.bluetooth.requestDevice(request);
    this.device.addEventListener('gattserverdisconnected', () => {
      this.disconnects++;
      say(`${this.device.name} disconnected`);
    });
    return this.open();
  },

  // open connects to the chosen device and prepares its GSP service.
  async open() {
    this.server = await this.device.gatt.connect();
    const service = await this.server.getPrimaryService(GSP_SERVICE);
    this.command = await service.getCharacteristic(COMMAND);
    this.data = await service.getCharacteristic(DATA);
    this.data.addEventListener('characteristicvaluechanged', (e) => this.receive(e.target.value));
    await this.data.startNotifications();
    say(`connected to ${this.device.name}`);
    return { id: this.device.id, name: this.device.name, connected: this.device.gatt.connected };
  },

  disconnect() {
    this.device.gatt.disconnect();
  },

  receive(view) {
    const b = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
    if (b[0] === RESPONSE && this.answers.has(b[1])) {
      const resolve = this.answers.get(b[1]);
      this.answers.delete(b[1]);
      resolve(b.slice(2));
    } else if (this.streams.has(b[1])) {
      this.streams.get(b[1])(b[0], b.slice(2));
    }
  },

  // send writes a command on a new reference, and resolves with its
  // answer's bytes after the code and reference.
  async send(code, payload = [], onData) {
    const ref = (this.refs++ % 250) + 1;
    const answer = new Promise((resolve) => this.answers.set(ref, resolve));
    if (onData) this.streams.set(ref, onData);
    await this.command.writeValueWithResponse(new Uint8Array([code, ref, ...payload]));
    return { ref, answer: await answer };
  },

  async status(code, payload) {
    const { answer } = await this.send(code, payload);
    return new DataView(answer.buffer).getUint16(0, true);
  },

  async hello() {
    const { answer } = await this.send(HELLO);
    const [serial, product, dfu, appName, appVersion] = cstrings(answer.slice(1));
    return { version: answer[0], serial, product, dfu, appName, appVersion };
  },

  async get(path) {
    const { answer } = await this.send(GET, zpath(path));
    return { status: new DataView(answer.buffer).getUint16(0, true), body: answer.slice(2) };
  },

  // info reads /Info in its binary form, the fields in the definition's
  // order as the movesense profile has them (its brandName is null, so
  // left out).
  async info() {
    const { status, body } = await this.get('/Info');
    let i = 0;
    const str = () => { const end = body.indexOf(0, i); const s = text.decode(body.slice(i, end)); i = end + 1; return s; };
    const pairs = (a, b) => Array.from({ length: body[i++] }, () => ({ [a]: str(), [b]: str() }));
    const info = { status };
    for (const f of ['manufacturerName', 'productName', 'variant', 'design', 'hwCompatibilityId', 'hwConfig', 'serial', 'pcbaSerial', 'sw', 'hw']) info[f] = str();
    info.additionalVersionInfo = pairs('name', 'version');
    info.addressInfo = pairs('name', 'address');
    info.apiLevel = str();
    info.rest = body.length - i;
    return info;
  },

  // stream subscribes to a measurement, decodes its first n notifications
  // (Acc: x, y, z per sample; ECG: int32 samples) and unsubscribes; it
  // counts the parts of notifications cut by the MTU, which it does not
  // join, as the family's apps do not.
  async stream(path, n) {
    const got = { items: [], parts: 0, longest: 0 };
    let done;
    const all = new Promise((resolve) => { done = resolve; });
    const { ref, answer } = await this.send(SUBSCRIBE, zpath(path), (code, b) => {
      got.longest = Math.max(got.longest, b.length + 2);
      if (code !== DATA_PART1) { got.parts++; return; }
      const v = new DataView(b.buffer), item = { Timestamp: v.getUint32(0, true) };
      if (path.startsWith('/Meas/ECG')) item.Samples = Array.from({ length: (b.length - 4) / 4 }, (_, k) => v.getInt32(4 + 4 * k, true));
      else item.XYZ = Array.from({ length: (b.length - 4) / 4 }, (_, k) => v.getFloat32(4 + 4 * k, true));
      if (got.items.length < n) got.items.push(item);
      if (got.items.length === n) done();
    });
    got.status = new DataView(answer.buffer).getUint16(0, true);
    if (got.status === 200) await all;
    this.streams.delete(ref);
    got.unsubscribed = await this.unsubscribe(ref);
    return got;
  },

  // unsubscribe ends the stream of a SUBSCRIBE's reference.
  async unsubscribe(ref) {
    const answer = new Promise((resolve) => this.answers.set(ref, resolve));
    await this.command.writeValueWithResponse(new Uint8Array([UNSUBSCRIBE, ref]));
    return new DataView((await answer).buffer).getUint16(0, true);
  },

  async battery() {
    const service = await this.server.getPrimaryService('battery_service');
    const level = await service.getCharacteristic('battery_level');
    return (await level.readValue()).getUint8(0);
  },

  // heartRate decodes n Heart Rate Measurements of the heart rate service
  // into heartRates.
  heartRates: [],
  async heartRate(n) {
    const c = await (await this.server.getPrimaryService('heart_rate')).getCharacteristic('heart_rate_measurement');
    const got = this.heartRates = [];
    await new Promise((resolve, reject) => {
      c.oncharacteristicvaluechanged = (e) => {
        const v = e.target.value, flags = v.getUint8(0), wide = flags & 1;
        const m = { bpm: wide ? v.getUint16(1, true) : v.getUint8(1), rr: [] };
        for (let k = wide ? 3 : 2; k + 1 < v.byteLength; k += 2) m.rr.push(v.getUint16(k, true) * 1000 / 1024);
        got.push(m);
        if (got.length === n) resolve();
      };
      c.startNotifications().catch(reject);
    });
    await c.stopNotifications();
    return got;
  },

  // logger records paths with the data logger for ms, as the family's apps
  // do (/Time/Detailed added), and fetches the new log.
  async logger(paths, ms) {
    const r = {};
    r.config = await this.status(PUT_DATALOGGER_CONFIG, [...paths, '/Time/Detailed'].flatMap(zpath));
    r.start = await this.status(PUT_DATALOGGER_STATE, [3]);
    await new Promise((resolve) => setTimeout(resolve, ms));
    r.stop = await this.status(PUT_DATALOGGER_STATE, [2]);
    const list = await this.get('/Mem/Logbook/Entries');
    const v = new DataView(list.body.buffer);
    r.entries = Array.from({ length: list.body[0] }, (_, k) => ({ id: v.getUint32(1 + 16 * k, true), size: Number(v.getBigUint64(9 + 16 * k, true)) }));
    r.id = r.entries[r.entries.length - 1].id;
    Object.assign(r, await this.fetchLog(r.id));
    return r;
  },

  // fetchLog reads a log with FETCH_LOG: [offset, bytes] notifications
  // written at their offsets, until one with the size alone.
  async fetchLog(id) {
    const chunks = [];
    let end;
    const ended = new Promise((resolve) => { end = resolve; });
    const { ref, answer } = await this.send(FETCH_LOG, [id & 0xff, id >> 8 & 0xff, id >> 16 & 0xff, id >>> 24], (code, b) => {
      const offset = new DataView(b.buffer).getUint32(0, true);
      if (b.length === 4) end(offset);
      else chunks.push([offset, b.slice(4)]);
    });
    const status = new DataView(answer.buffer).getUint16(0, true);
    if (status !== 200) return { fetched: status };
    const size = await ended;
    this.streams.delete(ref);
    const bytes = new Uint8Array(size);
    for (const [offset, b] of chunks) bytes.set(b, offset);
    return { fetched: status, size, bytes: base64(bytes) };
  },
};
window.app = app;

document.querySelector('#connect').addEventListener('click', () => {
  app.connect().then((d) => say(JSON.stringify(d)), (e) => say(`${e.name}: ${e.message}`));
});
