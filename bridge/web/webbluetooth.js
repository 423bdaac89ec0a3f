// navigator.bluetooth for senseboard: Web Bluetooth apps written for the
// sensor family's real sensors reach senseboard's devices through the phone
// bridge, unchanged. Loaded before an app runs (a <script src> tag, a test
// tool's init script, a bookmarklet), it installs a navigator.bluetooth
// backed by the bridge's API, in place of the browser's own.
//
// The bridge's address is globalThis.senseboardBridge when set before the
// script runs, else that of the script's own URL; the access token, when the
// bridge needs one, is globalThis.senseboardToken or the URL's ?token=; the
// ATT MTU is globalThis.senseboardMTU or ?mtu=, 517 (Chrome's on Linux and
// Android) otherwise. docs/webbluetooth.md says how to use it and what it
// does not do.
//
// A device's connection is its GSP WebSocket (/api/devices/{serial}/gsp):
// writes to the GSP command characteristic and its notifications go over
// it as binary messages, reads (the Battery Level) as text messages. The
// heart rate service's notifications come over /api/ws.
(() => {
  'use strict';
  if (globalThis.senseboardBluetooth) return; // loaded twice: the first stays

  const prefix = 'senseboard webbluetooth:';
  const here = document.currentScript && document.currentScript.src ? new URL(document.currentScript.src) : null;
  const bridge = new URL(String(globalThis.senseboardBridge || (here ? here.origin : location.origin)));
  const token = String(globalThis.senseboardToken || (here && here.searchParams.get('token')) || '');
  const mtu = (() => {
    const asked = globalThis.senseboardMTU || (here && here.searchParams.get('mtu'));
    if (asked === undefined || asked === null || asked === '') return 517;
    const n = Number(asked);
    if (Number.isInteger(n) && n >= 23 && n <= 517) return n;
    console.error(prefix, `ATT MTU ${asked}: a whole number of bytes from 23 to 517; using 517`);
    return 517;
  })();

  // ---- UUIDs

  const base = '-0000-1000-8000-00805f9b34fb';
  const uuid16 = (n) => n.toString(16).padStart(8, '0') + base;
  const uuidRE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  // The names of the assigned numbers that apps use most (the specification's
  // GATT names); any other is given as a number or a UUID.
  const assigned = {
    service: {
      generic_access: 0x1800, generic_attribute: 0x1801, immediate_alert: 0x1802, link_loss: 0x1803,
      tx_power: 0x1804, current_time: 0x1805, health_thermometer: 0x1809, device_information: 0x180a,
      heart_rate: 0x180d, battery_service: 0x180f, blood_pressure: 0x1810, human_interface_device: 0x1812,
      running_speed_and_cadence: 0x1814, cycling_speed_and_cadence: 0x1816, cycling_power: 0x1818,
      environmental_sensing: 0x181a, body_composition: 0x181b, user_data: 0x181c, weight_scale: 0x181d,
      fitness_machine: 0x1826,
    },
    characteristic: {
      'gap.device_name': 0x2a00, 'gap.appearance': 0x2a01, battery_level: 0x2a19, model_number_string: 0x2a24,
      serial_number_string: 0x2a25, firmware_revision_string: 0x2a26, hardware_revision_string: 0x2a27,
      software_revision_string: 0x2a28, manufacturer_name_string: 0x2a29, heart_rate_measurement: 0x2a37,
      body_sensor_location: 0x2a38, heart_rate_control_point: 0x2a39, temperature_measurement: 0x2a1c,
    },
    descriptor: {
      'gatt.characteristic_extended_properties': 0x2900, 'gatt.characteristic_user_description': 0x2901,
      'gatt.client_characteristic_configuration': 0x2902, 'gatt.server_characteristic_configuration': 0x2903,
    },
  };
  const kindName = { service: 'Service', characteristic: 'Characteristic', descriptor: 'Descriptor' };

  // uuidOf resolves a service, characteristic or descriptor as the
  // specification's BluetoothUUID does: a 16- or 32-bit number, a UUID in
  // lower case, or an assigned name; anything else is a TypeError.
  function uuidOf(kind, name) {
    if (typeof name === 'number' && Number.isInteger(name) && name >= 0 && name <= 0xffffffff) return uuid16(name);
    if (typeof name === 'string' && uuidRE.test(name)) return name;
    if (typeof name === 'string' && Object.hasOwn(assigned[kind], name)) return uuid16(assigned[kind][name]);
    throw new TypeError(`Failed to execute: Invalid ${kindName[kind]} name: '${name}'. It must be a valid UUID alias ` +
      `(e.g. 0x1234), UUID (lowercase hex characters e.g. '00001234-0000-1000-8000-00805f9b34fb'), or recognized ` +
      `standard name from https://www.bluetooth.com/specifications/gatt/${kind}s e.g. '${Object.keys(assigned[kind])[0]}'.`);
  }

  const BluetoothUUID = {
    getService: (name) => uuidOf('service', name),
    getCharacteristic: (name) => uuidOf('characteristic', name),
    getDescriptor: (name) => uuidOf('descriptor', name),
    canonicalUUID: (alias) => uuid16(Number(alias) >>> 0),
  };

  // The device's GATT services as a central discovers them.
  const GSP = {
    service: '34802252-7185-4d5d-b431-630e7050e8f0',
    command: '34800001-7185-4d5d-b431-630e7050e8f0',
    data: '34800002-7185-4d5d-b431-630e7050e8f0',
  };
  const BATTERY = { service: uuid16(0x180f), level: uuid16(0x2a19) };
  const HRS = { service: uuid16(0x180d), measurement: uuid16(0x2a37) };
  const props = (p) => Object.freeze({
    broadcast: false, read: !!p.read, writeWithoutResponse: !!p.writeWithoutResponse, write: !!p.write,
    notify: !!p.notify, indicate: false, authenticatedSignedWrites: false, reliableWrite: false, writableAuxiliaries: false,
  });
  function servicesOf(state) {
    const s = [
      { uuid: GSP.service, chars: [
        { uuid: GSP.command, props: props({ write: true, writeWithoutResponse: true }) },
        { uuid: GSP.data, props: props({ notify: true }) },
      ] },
      { uuid: BATTERY.service, chars: [{ uuid: BATTERY.level, props: props({ read: true }) }] },
    ];
    if (state.hrs) s.push({ uuid: HRS.service, chars: [{ uuid: HRS.measurement, props: props({ notify: true }) }] });
    return s;
  }

  // ---- errors as the browser raises them

  const fail = (name, message) => new DOMException(message, name);
  const disconnected = (what) => fail('NetworkError',
    `GATT Server is disconnected. Cannot ${what}. (Re)connect first with \`device.gatt.connect\`.`);
  const notPermitted = () => fail('NotSupportedError', 'GATT operation not permitted.');

  // ---- the bridge's API

  const unreachable = () => location.origin === bridge.origin
    ? `the bridge at ${bridge.origin} does not answer: is it running?`
    : `the bridge at ${bridge.origin} does not answer this page: it does not run, or it refuses pages of ${location.origin} ` +
      `(start it with --allow-origin ${location.origin})`;

  async function api(method, path, body) {
    const headers = {};
    if (token) headers.Authorization = 'Bearer ' + token;
    if (method !== 'GET') headers['Content-Type'] = 'application/json'; // the bridge takes JSON only
    let r;
    try {
      r = await fetch(new URL(path, bridge), { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit' });
    } catch {
      throw new Error(unreachable());
    }
    const data = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(data.error || `${r.status} ${r.statusText}`);
    return data;
  }

  function socketURL(path, query = {}) {
    const u = new URL(path, bridge);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
    if (token) u.searchParams.set('token', token);
    return u;
  }

  // ---- advertisements: what filters match

  const hex = (s) => Uint8Array.from((s || '').match(/../g) || [], (h) => parseInt(h, 16));

  // advertised reads the AD structures of a device's packets: its service
  // UUIDs, manufacturer data and service data.
  function advertised(state) {
    const a = { services: new Set(), manufacturer: new Map(), serviceData: new Map() };
    for (const p of [hex(state.adv), hex(state.scanResp)]) {
      for (let i = 0; i + 1 < p.length && p[i] > 0; i += p[i] + 1) {
        const type = p[i + 1], d = p.subarray(i + 2, Math.min(i + 1 + p[i], p.length));
        if (type === 0x02 || type === 0x03) {
          for (let j = 0; j + 1 < d.length; j += 2) a.services.add(uuid16(d[j] | d[j + 1] << 8));
        } else if (type === 0x06 || type === 0x07) {
          for (let j = 0; j + 16 <= d.length; j += 16) {
            const h = [...d.subarray(j, j + 16)].reverse().map((b) => b.toString(16).padStart(2, '0')).join('');
            a.services.add(`${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`);
          }
        } else if (type === 0xff && d.length >= 2) {
          a.manufacturer.set(d[0] | d[1] << 8, d.slice(2));
        } else if (type === 0x16 && d.length >= 2) {
          a.serviceData.set(uuid16(d[0] | d[1] << 8), d.slice(2));
        }
      }
    }
    return a;
  }

  const bytesOf = (v, what) => {
    if (v instanceof ArrayBuffer) return new Uint8Array(v.slice(0));
    if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
    throw new TypeError(`${what} is not a BufferSource`);
  };

  function checkDataFilters(list, what, key) {
    if (!Array.isArray(list) || list.length === 0) throw new TypeError(`'${what}' must contain at least one entry`);
    return list.map((f) => {
      const prefix = f.dataPrefix === undefined ? new Uint8Array() : bytesOf(f.dataPrefix, `${what}.dataPrefix`);
      const mask = f.mask === undefined ? null : bytesOf(f.mask, `${what}.mask`);
      if (mask && mask.length !== prefix.length) throw new TypeError(`'mask' size must be equal to 'dataPrefix' size`);
      return { key: key(f), prefix, mask };
    });
  }

  // checkFilter reads one filter of requestDevice's options, raising the
  // TypeErrors the browser raises.
  function checkFilter(f, where) {
    if (typeof f !== 'object' || f === null) throw new TypeError(`${where} is not an object`);
    const out = {};
    if (f.services !== undefined) {
      if (!Array.isArray(f.services) || f.services.length === 0) throw new TypeError(`'services', if present, must contain at least one service.`);
      out.services = f.services.map((s) => uuidOf('service', s));
    }
    if (f.name !== undefined) {
      if (new TextEncoder().encode(f.name).length > 248) throw new TypeError(`A device name can't be longer than 248 bytes.`);
      out.name = String(f.name);
    }
    if (f.namePrefix !== undefined) {
      if (f.namePrefix === '') throw new TypeError(`'namePrefix', if present, must be non-empty.`);
      out.namePrefix = String(f.namePrefix);
    }
    if (f.manufacturerData !== undefined) out.manufacturerData = checkDataFilters(f.manufacturerData, 'manufacturerData', (m) => m.companyIdentifier);
    if (f.serviceData !== undefined) out.serviceData = checkDataFilters(f.serviceData, 'serviceData', (s) => uuidOf('service', s.service));
    if (Object.keys(out).length === 0) throw new TypeError(`A filter must restrict the devices in some way.`);
    return out;
  }

  // checkOptions reads requestDevice's options as the specification says.
  function checkOptions(options = {}) {
    const { filters, exclusionFilters, acceptAllDevices, optionalServices = [] } = options;
    if (acceptAllDevices && filters !== undefined) throw new TypeError(`Failed to execute 'requestDevice' on 'Bluetooth': Cannot set both 'filters' and 'acceptAllDevices'.`);
    if (!acceptAllDevices && filters === undefined) throw new TypeError(`Failed to execute 'requestDevice' on 'Bluetooth': Either 'filters' should be present or 'acceptAllDevices' should be true, but not both.`);
    if (filters !== undefined && (!Array.isArray(filters) || filters.length === 0)) throw new TypeError(`Failed to execute 'requestDevice' on 'Bluetooth': 'filters' member must be non-empty to find any devices.`);
    if (exclusionFilters !== undefined && (acceptAllDevices || !Array.isArray(exclusionFilters) || exclusionFilters.length === 0)) {
      throw new TypeError(`Failed to execute 'requestDevice' on 'Bluetooth': 'exclusionFilters' must be non-empty and go with 'filters'.`);
    }
    return {
      all: !!acceptAllDevices,
      filters: (filters || []).map((f, i) => checkFilter(f, `filters[${i}]`)),
      exclusions: (exclusionFilters || []).map((f, i) => checkFilter(f, `exclusionFilters[${i}]`)),
      optional: optionalServices.map((s) => uuidOf('service', s)),
    };
  }

  const dataMatches = (want, have) => want.every((w) => {
    const d = have.get(w.key);
    return d && d.length >= w.prefix.length && w.prefix.every((b, i) => ((d[i] ^ b) & (w.mask ? w.mask[i] : 0xff)) === 0);
  });

  function matches(f, state, adv) {
    const name = state.name || '';
    return (f.name === undefined || name === f.name) &&
      (f.namePrefix === undefined || (name !== '' && name.startsWith(f.namePrefix))) &&
      (f.services === undefined || f.services.every((s) => adv.services.has(s))) &&
      (f.manufacturerData === undefined || dataMatches(f.manufacturerData, adv.manufacturer)) &&
      (f.serviceData === undefined || dataMatches(f.serviceData, adv.serviceData));
  }

  // candidates are the devices a scan shows: those that advertise, and
  // those the bridge (the computer's Bluetooth) is connected to.
  async function candidates(opts) {
    const states = await api('GET', '/api/devices');
    const seen = states.filter((s) => s.state === 'advertising' || s.state === 'connected');
    const chosen = seen.filter((s) => {
      const adv = advertised(s);
      return (opts.all || opts.filters.some((f) => matches(f, s, adv))) && !opts.exclusions.some((f) => matches(f, s, adv));
    });
    return { seen, chosen };
  }

  // explain says on the console why no device matched.
  function explain(options, seen) {
    const shown = JSON.stringify(options, (k, v) => (ArrayBuffer.isView(v) ? [...new Uint8Array(v.buffer, v.byteOffset, v.byteLength)] : v));
    const lines = seen.map((s) => `  "${s.name}" (device ${s.serial}, ${s.state}), services ${[...advertised(s).services].join(', ') || 'none'}`);
    console.warn(prefix, `requestDevice: no device matches ${shown}; the bridge at ${bridge.origin} sees ` +
      (lines.length ? `${lines.length} device(s):\n${lines.join('\n')}` : 'no device that advertises') +
      `\nDevices of the default profile advertise "Senseboard <serial>" and the platform's 128-bit service; ` +
      `start them with --profile movesense to look like current sensors ("Movesense <serial>", services 0xfdf3 and 0x180d).`);
  }

  // ---- permissions: the devices granted to this origin

  const grantsKey = 'senseboard-webbluetooth-grants';
  const memoryGrants = {};
  function grants() {
    try {
      return JSON.parse(localStorage.getItem(grantsKey) || '{}');
    } catch {
      return memoryGrants;
    }
  }
  function saveGrants(g) {
    try {
      localStorage.setItem(grantsKey, JSON.stringify(g));
    } catch {
      Object.assign(memoryGrants, g);
    }
  }

  // ---- events

  // fire dispatches an event at target, and then at its ancestors in the
  // specification's Bluetooth tree (characteristic, service, device,
  // navigator.bluetooth), with target kept, as a bubbling event reaches them.
  function fire(target, type, ...ancestors) {
    target.dispatchEvent(new Event(type, { bubbles: true }));
    for (const a of ancestors) {
      const e = new Event(type, { bubbles: true });
      Object.defineProperty(e, 'target', { value: target });
      a.dispatchEvent(e);
    }
  }

  // handlers gives a class the on<type> attributes of its events.
  function handlers(cls, ...types) {
    for (const type of types) {
      const key = Symbol(type);
      Object.defineProperty(cls.prototype, 'on' + type, {
        configurable: true, enumerable: true,
        get() { return this[key] || null; },
        set(f) {
          if (this[key]) this.removeEventListener(type, this[key]);
          this[key] = typeof f === 'function' ? f : null;
          if (this[key]) this.addEventListener(type, this[key]);
        },
      });
    }
  }

  // ---- the bridge's /api/ws, for heart rate notifications

  const hrsListeners = new Map(); // serial -> function(content)
  let hrsSocket = null;
  function hrsSocketOpen() {
    if (hrsSocket) return hrsSocket;
    hrsSocket = new Promise((resolve, reject) => {
      const ws = new WebSocket(socketURL('/api/ws'));
      ws.onopen = () => resolve(ws);
      ws.onerror = () => reject(new Error(unreachable()));
      ws.onclose = () => { hrsSocket = null; };
      ws.onmessage = (e) => {
        const m = JSON.parse(e.data);
        if (m.type === 'hrs' && hrsListeners.has(m.device)) hrsListeners.get(m.device)(m.content);
      };
    });
    hrsSocket.catch(() => { hrsSocket = null; });
    return hrsSocket;
  }

  // heartRateMeasurement encodes the bridge's heart rate data as the heart
  // rate service notifies it: flags, the rate in beats per minute (one byte,
  // or two when it does not fit), the RR intervals in 1/1024 s.
  function heartRateMeasurement({ average = 0, rrData = [] }) {
    const bpm = Math.max(0, Math.min(Math.floor(average + 0.5), 0xffff));
    const out = [(bpm > 0xff ? 0x01 : 0) | (rrData.length ? 0x10 : 0)];
    if (bpm > 0xff) out.push(bpm & 0xff, bpm >> 8);
    else out.push(bpm);
    for (const rr of rrData) {
      const v = Math.min(Math.floor(rr * 1024 / 1000), 0xffff);
      out.push(v & 0xff, v >> 8);
    }
    return new Uint8Array(out);
  }

  // ---- a device's connection: its GSP WebSocket

  // closeReason words how the bridge ended a device's GSP WebSocket; its
  // own reasons name the device.
  function closeReason(e, serial) {
    if (e.reason) return e.reason;
    if (e.code === 1006) return `device ${serial}: the bridge at ${bridge.origin} ended the connection or refused it`;
    return `device ${serial}: the WebSocket closed with code ${e.code}`;
  }

  // Link is one connection to a device: its GSP WebSocket.
  class Link {
    constructor(serial, onNotify, onEnd) {
      this.reads = []; // the reads sent, answered in order
      this.ended = false;
      this.onEnd = onEnd;
      this.ws = new WebSocket(socketURL(`/api/devices/${encodeURIComponent(serial)}/gsp`, { mtu }));
      this.ws.binaryType = 'arraybuffer';
      this.ws.onmessage = (e) => {
        if (typeof e.data !== 'string') return onNotify(new DataView(e.data));
        const a = JSON.parse(e.data), r = this.reads.shift();
        if (!r) return;
        if (a.error) r.reject(fail('NotSupportedError', `device ${serial}: ${a.error}`));
        else r.resolve(Uint8Array.from(atob(a.data), (c) => c.charCodeAt(0)));
      };
      this.ws.onclose = (e) => this.end(closeReason(e, serial));
      // The bridge answers a read once it has connected to the device,
      // chosen the MTU and switched the GSP notifications on: the first
      // answer says the connection is ready, a close before it why not.
      this.ready = new Promise((resolve, reject) => {
        this.ws.onopen = () => this.read(BATTERY.level).then(resolve, (err) => (this.ended ? reject(err) : resolve()));
        this.failed = reject;
      });
    }

    read(char) {
      return new Promise((resolve, reject) => {
        if (this.ended) return reject(disconnected('perform GATT operations'));
        this.reads.push({ resolve, reject });
        this.ws.send(JSON.stringify({ op: 'read', char }));
      });
    }

    write(bytes) {
      if (this.ended) throw disconnected('perform GATT operations');
      if (bytes.length > mtu - 3) {
        throw fail('NotSupportedError', `a write of ${bytes.length} bytes: at ATT MTU ${mtu} a write carries at most ${mtu - 3} (the bridge carries no long writes)`);
      }
      this.ws.send(bytes);
    }

    // end ends the link once: pending reads fail, and onEnd hears why
    // (nothing when the page closed it).
    end(why, asked = false) {
      if (this.ended) return;
      this.ended = true;
      const err = disconnected('perform GATT operations');
      for (const r of this.reads.splice(0)) r.reject(err);
      this.failed(fail('NetworkError', `Connection failed for unknown reason: ${why}`));
      if (asked) this.ws.close(1000, 'disconnect');
      this.onEnd(asked ? null : why);
    }
  }

  // ---- BluetoothRemoteGATTCharacteristic and BluetoothRemoteGATTService

  class Characteristic extends EventTarget {
    #server; #conn; #props;
    constructor(service, uuid, p, server, conn) {
      super();
      this.service = service;
      this.uuid = uuid;
      this.value = null;
      this.#props = p;
      this.#server = server;
      this.#conn = conn;
    }
    get properties() { return this.#props; }

    // link returns the connection for a GATT operation, or raises what the
    // browser raises.
    #link(what) {
      const link = this.#server._link(this.#conn);
      if (link === undefined) throw disconnected(what);
      if (link === null) throw fail('InvalidStateError', 'GATT Characteristic no longer exists.');
      return link;
    }

    _changed(view) {
      this.value = view;
      fire(this, 'characteristicvaluechanged', this.service, this.service.device, bluetooth);
    }

    async readValue() {
      const link = this.#link('perform GATT operations');
      if (!this.#props.read) throw notPermitted();
      const bytes = await link.read(this.uuid);
      const view = new DataView(bytes.buffer);
      this._changed(view); // as the browser does for a read, too
      return view;
    }

    async #write(value, want) {
      const bytes = bytesOf(value, 'value');
      if (bytes.length > 512) throw fail('InvalidModificationError', `Value can't exceed 512 bytes.`);
      const link = this.#link('perform GATT operations');
      if (!want.some((p) => this.#props[p])) throw notPermitted();
      link.write(bytes);
    }
    writeValue(value) { return this.#write(value, ['write', 'writeWithoutResponse']); }
    writeValueWithResponse(value) { return this.#write(value, ['write']); }
    writeValueWithoutResponse(value) { return this.#write(value, ['writeWithoutResponse']); }

    async startNotifications() {
      this.#link('perform GATT operations');
      if (!this.#props.notify) throw notPermitted();
      await this.#server._notify(this, true);
      return this;
    }

    async stopNotifications() {
      this.#link('perform GATT operations');
      await this.#server._notify(this, false);
      return this;
    }

    async getDescriptor(d) {
      uuidOf('descriptor', d);
      this.#link('retrieve descriptors');
      throw fail('NotFoundError', `No Descriptors found in Characteristic with UUID ${this.uuid}.`);
    }
    async getDescriptors(d) {
      if (d !== undefined) uuidOf('descriptor', d);
      this.#link('retrieve descriptors');
      throw fail('NotFoundError', `No Descriptors found in Characteristic with UUID ${this.uuid}.`);
    }
  }
  handlers(Characteristic, 'characteristicvaluechanged');

  class Service extends EventTarget {
    #server; #conn; #chars;
    constructor(device, spec, server, conn) {
      super();
      this.device = device;
      this.uuid = spec.uuid;
      this.isPrimary = true;
      this.#server = server;
      this.#conn = conn;
      this.#chars = spec.chars.map((c) => new Characteristic(this, c.uuid, c.props, server, conn));
    }
    #check() {
      const link = this.#server._link(this.#conn);
      if (link === undefined) throw disconnected('retrieve characteristics');
      if (link === null) throw fail('InvalidStateError', 'GATT Service no longer exists.');
    }
    async getCharacteristic(c) {
      const uuid = uuidOf('characteristic', c);
      this.#check();
      const found = this.#chars.find((x) => x.uuid === uuid);
      if (!found) throw fail('NotFoundError', `No Characteristics matching UUID ${uuid} found in Service with UUID ${this.uuid}.`);
      return found;
    }
    async getCharacteristics(c) {
      const uuid = c === undefined ? undefined : uuidOf('characteristic', c);
      this.#check();
      const found = this.#chars.filter((x) => uuid === undefined || x.uuid === uuid);
      if (!found.length) {
        throw fail('NotFoundError', uuid ? `No Characteristics matching UUID ${uuid} found in Service with UUID ${this.uuid}.` : `No Characteristics found in service.`);
      }
      return found;
    }
    async getIncludedService(s) {
      uuidOf('service', s);
      this.#check();
      throw fail('NotFoundError', `No Services found in service.`);
    }
    async getIncludedServices() {
      this.#check();
      throw fail('NotFoundError', `No Services found in service.`);
    }
  }
  handlers(Service, 'characteristicvaluechanged');

  // ---- BluetoothRemoteGATTServer

  class Server {
    #link = null; // the open connection
    #conn = 0; // which connection it is: the services of earlier ones are gone
    #services = null;
    #connecting = null;
    #hrs = null; // the heart rate characteristic while it notifies
    #gspData = null; // the GSP data characteristic while it notifies
    constructor(device, serial, allowed) {
      this.device = device;
      this._serial = serial;
      this._allowed = allowed; // the services this origin may use
    }
    get connected() { return this.#link !== null; }

    // _link returns the connection of the conn-th one, undefined when there
    // is none, null when conn was an earlier one.
    _link(conn) {
      if (this.#link === null) return undefined;
      return conn === this.#conn ? this.#link : null;
    }

    connect() {
      if (this.#link) return Promise.resolve(this);
      if (this.#connecting) return this.#connecting;
      this.#connecting = (async () => {
        const state = await api('GET', `/api/devices/${encodeURIComponent(this._serial)}`).catch((e) => {
          throw fail('NetworkError', `Connection failed for unknown reason: ${e.message}`);
        });
        if (state.state === 'gone') throw fail('NetworkError', `Bluetooth Device is no longer in range: device ${this._serial} ${state.note}`);
        const conn = this.#conn + 1;
        const link = new Link(this._serial, (view) => this.#gspData && this.#gspData._changed(view), (why) => this.#ended(link, why));
        try {
          await link.ready;
        } catch (e) {
          console.warn(prefix, `connect to "${this.device.name}": ${e.message}`);
          throw e;
        }
        this.#conn = conn;
        this.#link = link;
        this.#services = servicesOf(state).map((s) => new Service(this.device, s, this, conn));
        return this;
      })().finally(() => { this.#connecting = null; });
      return this.#connecting;
    }

    disconnect() {
      const link = this.#link;
      if (link) link.end('disconnect', true);
    }

    // ended cleans up after the connection ended, and tells the page: why
    // is the bridge's reason, or null when the page disconnected.
    #ended(link, why) {
      if (this.#link !== link) return; // it never got ready
      this.#link = null;
      this.#services = null;
      if (this.#hrs) this.#hrsOff();
      this.#gspData = null;
      if (why) console.warn(prefix, `"${this.device.name}" disconnected: ${why}`);
      fire(this.device, 'gattserverdisconnected', bluetooth);
    }

    async _notify(char, on) {
      if (char.uuid === GSP.data) {
        this.#gspData = on ? char : null; // the bridge notifies from the start; the page hears them from now
        return;
      }
      if (char.uuid !== HRS.measurement) return;
      if (on) {
        await hrsSocketOpen();
        hrsListeners.set(this._serial, (content) => char._changed(new DataView(heartRateMeasurement(content).buffer)));
        this.#hrs = char;
      } else if (this.#hrs) {
        this.#hrsOff();
        return;
      }
      await api('POST', `/api/devices/${encodeURIComponent(this._serial)}/hrs`, { notifications: on }).catch((e) => {
        throw fail('NetworkError', `GATT operation failed for unknown reason: ${e.message}`);
      });
    }

    #hrsOff() {
      hrsListeners.delete(this._serial);
      this.#hrs = null;
      api('POST', `/api/devices/${encodeURIComponent(this._serial)}/hrs`, { notifications: false }).catch(() => {});
    }

    #allowedService(uuid) {
      if (!this._allowed.has(uuid)) {
        throw fail('SecurityError', `Origin is not allowed to access the service. Tip: Add the service UUID to 'optionalServices' in requestDevice() options.`);
      }
    }

    async getPrimaryService(s) {
      const uuid = uuidOf('service', s);
      if (!this.#link) throw disconnected('retrieve services');
      this.#allowedService(uuid);
      const found = this.#services.find((x) => x.uuid === uuid);
      if (!found) throw fail('NotFoundError', `No Services matching UUID ${uuid} found in Device.`);
      return found;
    }

    async getPrimaryServices(s) {
      const uuid = s === undefined ? undefined : uuidOf('service', s);
      if (!this.#link) throw disconnected('retrieve services');
      if (uuid !== undefined) this.#allowedService(uuid);
      else if (this._allowed.size === 0) {
        throw fail('SecurityError', `Origin is not allowed to access any service. Tip: Add the service UUID to 'optionalServices' in requestDevice() options.`);
      }
      const found = this.#services.filter((x) => (uuid === undefined ? this._allowed.has(x.uuid) : x.uuid === uuid));
      if (!found.length) throw fail('NotFoundError', uuid ? `No Services matching UUID ${uuid} found in Device.` : `No Services found in device.`);
      return found;
    }
  }

  // ---- BluetoothDevice

  const idOf = (serial) => btoa('senseboard ' + serial).replace(/=+$/, '');

  class Device extends EventTarget {
    #gatt;
    constructor(serial, name, allowed) {
      super();
      this.id = idOf(serial);
      this.name = name;
      this.#gatt = new Server(this, serial, allowed);
    }
    get gatt() { return this.#gatt; }
    get watchingAdvertisements() { return false; }
    async watchAdvertisements() {
      throw fail('NotSupportedError', 'senseboard: watchAdvertisements is not supported; the bridge shows no advertisements as they come.');
    }
    async forget() {
      this.#gatt.disconnect();
      const g = grants();
      delete g[this.id];
      saveGrants(g);
      devices.delete(this.id);
    }
  }
  handlers(Device, 'gattserverdisconnected', 'characteristicvaluechanged', 'advertisementreceived');

  const devices = new Map(); // by id: one object per device, as the browser keeps

  // deviceFor returns the page's object of a granted device.
  function deviceFor(serial, name, allowed) {
    const id = idOf(serial);
    let d = devices.get(id);
    if (!d) {
      d = new Device(serial, name, new Set(allowed));
      devices.set(id, d);
    } else {
      for (const s of allowed) d.gatt._allowed.add(s);
    }
    return d;
  }

  // ---- the chooser

  // choose shows the devices that match over the page, and resolves with
  // the one picked, or null when the chooser is closed. It looks again
  // every second, as the browser's chooser goes on scanning.
  function choose(opts, first) {
    return new Promise((resolve) => {
      const host = document.createElement('div');
      host.id = 'senseboard-chooser';
      const root = host.attachShadow({ mode: 'open' });
      root.innerHTML = `<style>
        .back { position: fixed; inset: 0; background: rgba(0,0,0,.25); z-index: 2147483647; display: flex; align-items: flex-start; justify-content: center; font: 14px/1.4 system-ui, sans-serif; color: #1d2330; }
        .box { margin-top: 10vh; background: #fff; border-radius: 8px; box-shadow: 0 8px 30px rgba(0,0,0,.3); width: 24em; padding: 1em; }
        h2 { font-size: 15px; margin: 0 0 .2em; } p { margin: 0 0 .6em; color: #667085; font-size: 12px; }
        ul { list-style: none; margin: 0 0 .8em; padding: 0; max-height: 40vh; overflow: auto; border: 1px solid #d9dee8; border-radius: 6px; }
        li button { width: 100%; text-align: left; border: 0; border-bottom: 1px solid #d9dee8; background: #fff; padding: .5em .7em; font: inherit; cursor: pointer; }
        li button.selected { background: #e0eaff; } li button small { color: #667085; margin-left: .5em; }
        .actions { display: flex; justify-content: flex-end; gap: .5em; }
        .actions button { font: inherit; padding: .25em .9em; border: 1px solid #d9dee8; border-radius: 4px; background: #fff; cursor: pointer; }
        .actions button.pair { background: #2456c7; color: #fff; border-color: #2456c7; } .actions button:disabled { opacity: .5; cursor: default; }
      </style>
      <div class="back"><div class="box" role="dialog" aria-label="Choose a device">
        <h2></h2><p></p><ul></ul>
        <div class="actions"><button class="cancel" type="button">Cancel</button><button class="pair" type="button" disabled>Pair</button></div>
      </div></div>`;
      root.querySelector('h2').textContent = `${location.host || location.origin} wants to pair`;
      root.querySelector('p').textContent = `senseboard devices through the bridge at ${bridge.origin}`;
      const list = root.querySelector('ul'), pair = root.querySelector('.pair');
      let shown = [], picked = null;
      const render = (states) => {
        shown = states;
        list.replaceChildren(...states.map((s) => {
          const b = document.createElement('button');
          b.type = 'button';
          b.dataset.serial = s.serial;
          b.className = picked === s.serial ? 'selected' : '';
          b.append(s.name || `Unknown or Unsupported Device (${s.address})`);
          const small = document.createElement('small');
          small.textContent = s.serial;
          b.append(small);
          b.onclick = () => { picked = s.serial; render(shown); };
          b.ondblclick = () => done(s);
          const li = document.createElement('li');
          li.append(b);
          return li;
        }));
        pair.disabled = !shown.some((s) => s.serial === picked);
      };
      const timer = setInterval(() => candidates(opts).then((c) => render(c.chosen), () => {}), 1000);
      const done = (state) => {
        clearInterval(timer);
        host.remove();
        resolve(state);
      };
      root.querySelector('.cancel').onclick = () => done(null);
      pair.onclick = () => done(shown.find((s) => s.serial === picked) || null);
      host.addEventListener('keydown', (e) => { if (e.key === 'Escape') done(null); });
      render(first);
      (document.body || document.documentElement).append(host);
      root.querySelector('.cancel').focus();
    });
  }

  // ---- navigator.bluetooth

  class Bluetooth extends EventTarget {
    async getAvailability() { return true; }

    async requestDevice(options) {
      const opts = checkOptions(options);
      let found;
      try {
        found = await candidates(opts);
      } catch (e) {
        console.error(prefix, e.message);
        throw fail('NotFoundError', `Bluetooth adapter not available. (${e.message})`);
      }
      if (found.chosen.length === 0) {
        explain(options, found.seen);
        throw fail('NotFoundError', 'User cancelled the requestDevice() chooser. (senseboard: no device matches the filters; the console says what the bridge sees)');
      }
      const state = found.chosen.length === 1 ? found.chosen[0] : await choose(opts, found.chosen);
      if (!state) throw fail('NotFoundError', 'User cancelled the requestDevice() chooser.');
      const allowed = new Set([...opts.filters.flatMap((f) => f.services || []), ...opts.optional]);
      const g = grants(), id = idOf(state.serial);
      g[id] = { serial: state.serial, name: state.name, services: [...new Set([...(g[id] ? g[id].services : []), ...allowed])] };
      saveGrants(g);
      return deviceFor(state.serial, state.name, g[id].services);
    }

    async getDevices() {
      return Object.values(grants()).map((g) => deviceFor(g.serial, g.name, g.services));
    }
  }
  handlers(Bluetooth, 'availabilitychanged', 'gattserverdisconnected', 'characteristicvaluechanged', 'advertisementreceived');

  const bluetooth = new Bluetooth();
  Object.defineProperty(globalThis, 'senseboardBluetooth', { value: bluetooth });
  try {
    Object.defineProperty(Navigator.prototype, 'bluetooth', { configurable: true, enumerable: true, get: () => bluetooth });
  } catch {
    // an own property below does it
  }
  if (navigator.bluetooth !== bluetooth) Object.defineProperty(navigator, 'bluetooth', { configurable: true, enumerable: true, value: bluetooth });
  if (!globalThis.BluetoothUUID) globalThis.BluetoothUUID = BluetoothUUID;
})();
