"""How the stand-in reaches senseboard's phone bridge: its address, token,
device list and the GSP WebSocket's address.

Settings (environment):

SENSEBOARD_BRIDGE      the bridge's address, http://127.0.0.1:8080 when unset
SENSEBOARD_TOKEN       the bridge's access token, when it has one
SENSEBOARD_BLEAK_NAME  the device names scripts see, a template with {serial}
                       and {name}: "Movesense {serial}" for scripts that look
                       for the sensor family's names; the advertised name
                       ("Senseboard 000123") when unset
SENSEBOARD_MTU         the ATT MTU of connections, 23..517 (247 when unset)
"""

import asyncio
import json
import os
import urllib.error
import urllib.parse
import urllib.request
import uuid as _uuid

from .backends.device import BLEDevice
from .backends.scanner import AdvertisementData
from .exc import BleakError

DEFAULT_BRIDGE = "http://127.0.0.1:8080"
DEFAULT_MTU = 247
MIN_MTU, MAX_MTU = 23, 517


def bridge_url():
    url = os.environ.get("SENSEBOARD_BRIDGE", "").strip() or DEFAULT_BRIDGE
    if "://" not in url:
        url = "http://" + url
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https") or not u.netloc:
        raise BleakError(f"SENSEBOARD_BRIDGE={url!r}: give the bridge's address, like http://127.0.0.1:8080")
    return f"{u.scheme}://{u.netloc}{u.path.rstrip('/')}"


def token_headers():
    token = os.environ.get("SENSEBOARD_TOKEN", "").strip()
    return {"Authorization": f"Bearer {token}"} if token else {}


def mtu():
    value = os.environ.get("SENSEBOARD_MTU", "").strip()
    if not value:
        return DEFAULT_MTU
    try:
        n = int(value)
    except ValueError:
        n = 0
    if not MIN_MTU <= n <= MAX_MTU:
        raise BleakError(f"SENSEBOARD_MTU={value!r}: the ATT MTU is a whole number from {MIN_MTU} to {MAX_MTU}")
    return n


def gsp_url(serial, mtu_size):
    base = bridge_url()
    ws = "wss" + base[len("https"):] if base.startswith("https") else "ws" + base[len("http"):]
    return f"{ws}/api/devices/{urllib.parse.quote(serial, safe='')}/gsp?mtu={mtu_size}"


def _get(path):
    url = bridge_url() + path
    req = urllib.request.Request(url, headers={"Accept": "application/json", **token_headers()})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:
        raise BleakError(f"senseboard bridge {url}: {e.code} {_error_text(e)}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise BleakError(f"senseboard bridge {url}: {reason} (is the bridge running? set SENSEBOARD_BRIDGE)") from None


def _error_text(e):
    try:
        return json.loads(e.read()).get("error", "")
    except (ValueError, AttributeError, OSError):
        return e.reason


async def devices():
    """The devices a scan finds: those advertising and those the bridge is
    connected to (whose connection it shares), as (BLEDevice,
    AdvertisementData) pairs."""
    states = await asyncio.to_thread(_get, "/api/devices")
    out = []
    for st in states:
        if st.get("state") not in ("advertising", "connected"):
            continue
        out.append(found(st))
    return out


def found(st):
    """A bridge device state as bleak's device and advertisement."""
    adv = parse_advertisement(bytes.fromhex(st.get("adv") or ""), bytes.fromhex(st.get("scanResp") or ""))
    template = os.environ.get("SENSEBOARD_BLEAK_NAME", "")
    name = st.get("name") or adv.local_name
    if template:
        try:
            name = template.format(serial=st["serial"], name=name)
        except (KeyError, IndexError, ValueError) as e:
            raise BleakError(f"SENSEBOARD_BLEAK_NAME={template!r}: {e}; use {{serial}} and {{name}}") from None
    adv.local_name = name
    details = {"serial": st["serial"], "bridge": bridge_url(), "state": st}
    return BLEDevice(st.get("address", ""), name, details), adv


def parse_advertisement(adv, scan_resp):
    """Reads the AD structures of an advertising and a scan response packet."""
    data = AdvertisementData()
    for packet in (adv, scan_resp):
        i = 0
        while i < len(packet):
            n = packet[i]
            if n == 0 or i + 1 + n > len(packet):
                break
            kind, value = packet[i + 1], packet[i + 2:i + 1 + n]
            i += 1 + n
            if kind in (0x08, 0x09):
                data.local_name = value.decode("utf-8", "replace")
            elif kind in (0x02, 0x03):
                for j in range(0, len(value) - 1, 2):
                    data.service_uuids.append(f"0000{int.from_bytes(value[j:j + 2], 'little'):04x}-0000-1000-8000-00805f9b34fb")
            elif kind in (0x06, 0x07):
                for j in range(0, len(value) - 15, 16):
                    data.service_uuids.append(str(_uuid.UUID(bytes=bytes(reversed(value[j:j + 16])))))
            elif kind == 0x0A and len(value) == 1:
                data.tx_power = int.from_bytes(value, "little", signed=True)
            elif kind == 0xFF and len(value) >= 2:
                data.manufacturer_data[int.from_bytes(value[:2], "little")] = bytes(value[2:])
            elif kind == 0x16 and len(value) >= 2:
                key = f"0000{int.from_bytes(value[:2], 'little'):04x}-0000-1000-8000-00805f9b34fb"
                data.service_data[key] = bytes(value[2:])
    return data


def error_of_handshake(url):
    """The bridge's error for a WebSocket handshake it refused, read with a
    plain request to the same address."""
    http = "http" + url[len("ws"):]
    req = urllib.request.Request(http, headers=token_headers())
    try:
        with urllib.request.urlopen(req, timeout=10):
            return ""
    except urllib.error.HTTPError as e:
        return _error_text(e)
    except (urllib.error.URLError, OSError) as e:
        return str(getattr(e, "reason", e))
