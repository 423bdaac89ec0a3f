"""A stand-in for the bleak library that reaches senseboard's devices
through its phone bridge, so that scripts written for real sensors of the
family with bleak run unmodified against senseboard.

Put this package's directory on PYTHONPATH (it then shadows an installed
bleak) and point it at the bridge:

    PYTHONPATH=contrib/python/bleak SENSEBOARD_BRIDGE=http://127.0.0.1:8080 python3 script.py

A scan lists the devices the bridge sees (GET /api/devices). A client's
connection is the bridge's GSP WebSocket for the device
(/api/devices/{serial}/gsp): writes to the GSP command characteristic go to
the device, and the data characteristic's notifications come back to the
callbacks of start_notify; read_gatt_char of the battery service's Battery
Level is a read through the same WebSocket. Only the GSP and battery
services are served. The package's README says what is implemented and how
it differs from bleak on a real radio. Standard library and
python3-websockets only.
"""

import asyncio
import base64
import collections
import inspect
import json
import logging
import uuid as _uuid

from . import _bridge
from .backends.characteristic import BleakGATTCharacteristic
from .backends.device import BLEDevice
from .backends.scanner import AdvertisementData
from .backends.service import BleakGATTService, BleakGATTServiceCollection
from .exc import BleakCharacteristicNotFoundError, BleakDeviceNotFoundError, BleakError
from .uuids import normalize_uuid_str

__all__ = [
    "AdvertisementData", "BLEDevice", "BleakClient", "BleakError", "BleakGATTCharacteristic",
    "BleakGATTServiceCollection", "BleakScanner", "discover",
]

_logger = logging.getLogger("bleak")

GSP_SERVICE_UUID = "34802252-7185-4d5d-b431-630e7050e8f0"
GSP_COMMAND_UUID = "34800001-7185-4d5d-b431-630e7050e8f0"
GSP_DATA_UUID = "34800002-7185-4d5d-b431-630e7050e8f0"
BATTERY_SERVICE_UUID = "0000180f-0000-1000-8000-00805f9b34fb"
BATTERY_LEVEL_UUID = "00002a19-0000-1000-8000-00805f9b34fb"

# How often a running scanner asks the bridge for its devices, in seconds.
SCAN_INTERVAL = 0.25


def _call(callback, *args):
    """Calls a callback that may be a coroutine function; its task is kept
    until it ends. A callback's exception is logged, as bleak logs it, and
    does not end the scan or the connection."""
    try:
        result = callback(*args)
    except Exception:
        _logger.exception("callback %r raised", callback)
        return
    if inspect.isawaitable(result):
        task = asyncio.ensure_future(result)
        _tasks.add(task)
        task.add_done_callback(_done)


_tasks = set()


def _done(task):
    _tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        _logger.error("callback raised", exc_info=task.exception())


class BleakScanner:
    """Scans by asking the bridge which devices it sees, every SCAN_INTERVAL
    seconds while started. A detection callback gets (BLEDevice,
    AdvertisementData) for each device at each round, as advertisements
    repeat on the air."""

    def __init__(self, detection_callback=None, service_uuids=None, scanning_mode="active", **kwargs):
        self._callback = detection_callback
        self._service_uuids = [normalize_uuid_str(u) for u in service_uuids or []]
        self._seen = {}
        self._task = None

    def register_detection_callback(self, callback):
        self._callback = callback

    async def __aenter__(self):
        await self.start()
        return self

    async def __aexit__(self, *exc):
        await self.stop()

    async def start(self):
        if self._task is None:
            await self._round()  # a bridge that cannot be reached fails here
            self._task = asyncio.ensure_future(self._run())

    async def stop(self):
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def _run(self):
        while True:
            await asyncio.sleep(SCAN_INTERVAL)
            try:
                await self._round()
            except BleakError as e:
                _logger.warning("scan: %s", e)

    async def _round(self):
        for device, adv in await _bridge.devices():
            if self._service_uuids and not set(self._service_uuids) & set(adv.service_uuids):
                continue
            self._seen[device.address] = (device, adv)
            if self._callback is not None:
                _call(self._callback, device, adv)

    @property
    def discovered_devices(self):
        return [d for d, _ in self._seen.values()]

    @property
    def discovered_devices_and_advertisement_data(self):
        return dict(self._seen)

    async def advertisement_data(self):
        """Yields (BLEDevice, AdvertisementData) as the scan finds them."""
        queue = asyncio.Queue()
        previous = self._callback
        self._callback = lambda d, a: queue.put_nowait((d, a))
        try:
            async with self:
                while True:
                    yield await queue.get()
        finally:
            self._callback = previous

    @classmethod
    async def discover(cls, timeout=5.0, *, return_adv=False, **kwargs):
        """The devices the bridge sees. It answers as soon as it sees one,
        or after timeout seconds with none."""
        scanner = cls(**kwargs)
        await scanner._until(lambda: bool(scanner._seen), timeout)
        if return_adv:
            return scanner.discovered_devices_and_advertisement_data
        return scanner.discovered_devices

    @classmethod
    async def find_device_by_filter(cls, filterfunc, timeout=10.0, **kwargs):
        """The first device for which filterfunc(device, adv) is true, or None after timeout seconds."""
        scanner = cls(**kwargs)
        hit = []

        def match():
            for d, a in scanner._seen.values():
                if filterfunc(d, a):
                    hit.append(d)
                    return True
            return False

        await scanner._until(match, timeout)
        return hit[0] if hit else None

    @classmethod
    async def find_device_by_name(cls, name, timeout=10.0, **kwargs):
        """The device named name (see SENSEBOARD_BLEAK_NAME), or None after timeout seconds."""
        return await cls.find_device_by_filter(lambda d, a: a.local_name == name or d.name == name, timeout, **kwargs)

    @classmethod
    async def find_device_by_address(cls, device_identifier, timeout=10.0, **kwargs):
        """The device with a BLE address (or serial number), or None after timeout seconds."""
        want = str(device_identifier).lower()
        return await cls.find_device_by_filter(
            lambda d, a: d.address.lower() == want or d.details.get("serial", "").lower() == want, timeout, **kwargs)

    async def _until(self, done, timeout):
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        await self._round()
        while not done() and loop.time() < end:
            await asyncio.sleep(min(SCAN_INTERVAL, max(0.0, end - loop.time())))
            await self._round()


async def discover(timeout=5.0, **kwargs):
    """bleak's older module-level discover()."""
    return await BleakScanner.discover(timeout, **kwargs)


def _services():
    """The services a client reaches through the bridge: GSP and the battery."""
    level = BleakGATTCharacteristic(BATTERY_LEVEL_UUID, 0x12, ["read"], BATTERY_SERVICE_UUID, "Battery Level")
    command = BleakGATTCharacteristic(GSP_COMMAND_UUID, 0x22, ["write", "write-without-response"],
                                      GSP_SERVICE_UUID, "GSP command")
    data = BleakGATTCharacteristic(GSP_DATA_UUID, 0x24, ["notify"], GSP_SERVICE_UUID, "GSP data")
    return BleakGATTServiceCollection([BleakGATTService(BATTERY_SERVICE_UUID, 0x10, [level], "Battery Service"),
                                       BleakGATTService(GSP_SERVICE_UUID, 0x20, [command, data], "GATT SensorData")])


class BleakClient:
    """A connection to a device through the bridge's GSP WebSocket.

    address_or_ble_device is a BLEDevice of a scan, or a BLE address or a
    serial number of a device the bridge sees."""

    def __init__(self, address_or_ble_device, disconnected_callback=None, services=None, *,
                 timeout=10.0, **kwargs):
        if isinstance(address_or_ble_device, BLEDevice):
            self._device = address_or_ble_device
            self._address = address_or_ble_device.address
        else:
            self._device = None
            self._address = str(address_or_ble_device)
        self._disconnected_callback = disconnected_callback
        self._timeout = timeout
        self._ws = None
        self._reader = None
        self._services = None
        self._notify = {}  # characteristic uuid: callback
        self._reads = collections.deque()  # futures of the reads sent, in order
        self._mtu = _bridge.DEFAULT_MTU
        self._closed = None  # why the connection ended

    def __str__(self):
        return f"BleakClient, {self._address}"

    @property
    def address(self):
        return self._address

    @property
    def mtu_size(self):
        """The connection's ATT MTU (SENSEBOARD_MTU, 247 by default)."""
        return self._mtu

    @property
    def is_connected(self):
        return self._ws is not None and self._closed is None

    @property
    def services(self):
        if self._services is None:
            raise BleakError("Service Discovery has not been performed yet")
        return self._services

    async def get_services(self, **kwargs):
        return self.services

    def set_disconnected_callback(self, callback, **kwargs):
        self._disconnected_callback = callback

    async def __aenter__(self):
        await self.connect()
        return self

    async def __aexit__(self, *exc):
        await self.disconnect()

    async def _serial(self):
        if self._device is not None and "serial" in self._device.details:
            return self._device.details["serial"]
        want = self._address.lower()
        names = []
        for d, adv in await _bridge.devices():
            if want in (d.address.lower(), d.details["serial"].lower(), (d.name or "").lower()):
                return d.details["serial"]
            names.append(f"{d.address} ({d.name})")
        seen = ", ".join(names) if names else "none"
        raise BleakDeviceNotFoundError(self._address, f"Device with address {self._address} was not found; "
                                       f"the senseboard bridge {_bridge.bridge_url()} sees: {seen}")

    async def connect(self, **kwargs):
        """Opens the device's GSP WebSocket: the bridge connects to the
        device, chooses the MTU and switches the notifications on. A
        refusal of the bridge or the device raises BleakError with its
        reason."""
        if self.is_connected:
            return True
        import websockets  # python3-websockets

        self._mtu = _bridge.mtu()
        url = _bridge.gsp_url(await self._serial(), self._mtu)
        headers = _bridge.token_headers()
        version = int(websockets.__version__.split(".")[0])
        opts = {"additional_headers" if version >= 14 else "extra_headers": headers}
        try:
            ws = await asyncio.wait_for(
                websockets.connect(url, compression=None, max_size=None, open_timeout=None, **opts), self._timeout)
        except asyncio.TimeoutError:
            raise BleakError(f"{url}: no answer within {self._timeout} s") from None
        except (OSError, websockets.exceptions.InvalidHandshake) as e:
            reason = await asyncio.to_thread(_bridge.error_of_handshake, url)
            raise BleakError(f"{url}: {reason or e}") from None
        # The bridge answers a ping only once the device's GSP session is
        # ready; a refusal comes as a close frame first.
        try:
            await asyncio.wait_for(await ws.ping(), self._timeout)
        except websockets.exceptions.ConnectionClosed as e:
            raise BleakError(f"connect to {self._address}: {_close_text(e)}") from None
        except asyncio.TimeoutError:
            await ws.close()
            raise BleakError(f"connect to {self._address}: the bridge did not set up GSP within {self._timeout} s") from None
        self._ws, self._closed = ws, None
        services = _services()
        for c in services.characteristics.values():
            c._max_write = self._mtu - 3
        self._services = services
        self._reader = asyncio.ensure_future(self._read(ws))
        return True

    async def _read(self, ws):
        import websockets

        try:
            async for message in ws:
                if isinstance(message, str):  # the answer to the oldest read
                    if self._reads:
                        read = self._reads.popleft()
                        if not read.done():
                            read.set_result(message)
                    continue
                callback = self._notify.get(GSP_DATA_UUID)
                if callback is not None:
                    _call(callback, self._services.get_characteristic(GSP_DATA_UUID), bytearray(message))
            self._closed = "the connection closed"
        except websockets.exceptions.ConnectionClosed as e:
            self._closed = _close_text(e)
        if ws.close_code is not None and self._closed == "the connection closed":
            self._closed = _close_text_of(ws.close_code, ws.close_reason)
        while self._reads:
            read = self._reads.popleft()
            if not read.done():
                read.set_exception(BleakError(f"read from {self._address}: {self._closed}"))
        if self._disconnected_callback is not None:
            _call(self._disconnected_callback, self)

    async def disconnect(self):
        """Closes the WebSocket; the bridge ends the streams this client
        left subscribed, as the device does when a central disconnects."""
        ws, reader = self._ws, self._reader
        if ws is None:
            return True
        await ws.close()
        if reader is not None:
            await reader
        self._ws = self._reader = None
        return True

    def _char(self, specifier):
        if isinstance(specifier, BleakGATTCharacteristic):
            specifier = specifier.uuid
        elif isinstance(specifier, _uuid.UUID):
            specifier = str(specifier)
        c = (self._services or _services()).get_characteristic(specifier)
        if c is None:
            raise BleakCharacteristicNotFoundError(
                specifier, f"Characteristic {specifier} was not found! Through the senseboard bridge a device "
                f"serves only its GSP service, {GSP_COMMAND_UUID} (write) and {GSP_DATA_UUID} (notify), "
                f"and its Battery Level {BATTERY_LEVEL_UUID} (read)")
        return c

    def _need_connection(self):
        if not self.is_connected:
            why = f": {self._closed}" if self._closed else ""
            raise BleakError(f"Not connected to {self._address}{why}")

    async def start_notify(self, char_specifier, callback, **kwargs):
        """callback(characteristic, bytearray) gets each notification; it may be a coroutine function."""
        self._need_connection()
        c = self._char(char_specifier)
        if "notify" not in c.properties:
            raise BleakError(f"Characteristic {c.uuid} does not support notifications; {GSP_DATA_UUID} does")
        self._notify[c.uuid] = callback

    async def stop_notify(self, char_specifier):
        self._need_connection()
        self._notify.pop(self._char(char_specifier).uuid, None)

    async def write_gatt_char(self, char_specifier, data, response=None):
        """Writes to the GSP command characteristic: one command, at most MTU - 3 bytes."""
        self._need_connection()
        c = self._char(char_specifier)
        if "write" not in c.properties:
            raise BleakError(f"Characteristic {c.uuid} is not writable; {GSP_COMMAND_UUID} is")
        data = bytes(data)
        if len(data) > self._mtu - 3:
            raise BleakError(f"a write of {len(data)} bytes: at MTU {self._mtu} a write carries at most {self._mtu - 3}")
        import websockets

        try:
            await self._ws.send(data)
        except websockets.exceptions.ConnectionClosed as e:
            raise BleakError(f"write to {self._address}: {_close_text(e)}") from None

    async def read_gatt_char(self, char_specifier, **kwargs):
        """Reads a characteristic: the Battery Level, a bytearray of one
        byte, the battery's charge in percent."""
        self._need_connection()
        c = self._char(char_specifier)
        if "read" not in c.properties:
            raise BleakError(f"Characteristic {c.uuid} is not readable: GSP answers come as notifications; "
                             f"{BATTERY_LEVEL_UUID} is readable")
        import websockets

        read = asyncio.get_running_loop().create_future()
        self._reads.append(read)
        try:
            await self._ws.send(json.dumps({"op": "read", "char": c.uuid}))
            answer = json.loads(await asyncio.wait_for(read, self._timeout))
        except websockets.exceptions.ConnectionClosed as e:
            if read.done() and not read.cancelled():
                read.exception()  # the end of the connection, said below
            read.cancel()
            raise BleakError(f"read from {self._address}: {_close_text(e)}") from None
        except asyncio.TimeoutError:
            raise BleakError(f"read of {c.uuid}: no answer within {self._timeout} s") from None
        if answer.get("error"):
            raise BleakError(f"read of {c.uuid}: {answer['error']}")
        return bytearray(base64.b64decode(answer.get("data") or ""))

    async def pair(self, *args, **kwargs):
        raise BleakError("pairing goes through the bridge: POST /api/devices/{serial}/pair with the pass key")

    async def unpair(self):
        raise BleakError("bonds are the bridge's: DELETE /Comm/Ble/Security/Bonds on the device")


def _close_text(e):
    rcvd = getattr(e, "rcvd", None)
    if rcvd is not None:
        return _close_text_of(rcvd.code, rcvd.reason)
    return str(e)


def _close_text_of(code, reason):
    return f"{reason or 'closed'} (WebSocket close {code})"
