"""The stand-in's edges: names as the family's scripts look for them
(SENSEBOARD_BLEAK_NAME), unknown addresses, one GSP client per device,
characteristics other than GSP's and the battery's, the MTU, and the end of
a connection.

Usage: edges.py SERIAL ADDRESS (with SENSEBOARD_BLEAK_NAME="Movesense {serial}"
and SENSEBOARD_MTU=23). Exits 0 and prints OK when every check passes.
"""

import asyncio
import sys

from bleak import BleakClient, BleakScanner
from bleak.exc import BleakCharacteristicNotFoundError, BleakDeviceNotFoundError, BleakError

COMMAND = "34800001-7185-4d5d-b431-630e7050e8f0"
DATA = "34800002-7185-4d5d-b431-630e7050e8f0"
BATTERY_LEVEL = "00002a19-0000-1000-8000-00805f9b34fb"
PLATFORM = "61353090-8231-49cc-b57a-886370740041"


def check(ok, what):
    if not ok:
        raise SystemExit("FAIL: " + what)


async def raises(kind, text, coro):
    try:
        await coro
    except kind as e:
        check(text in str(e), f"{kind.__name__}: {e!r} lacks {text!r}")
        return
    raise SystemExit(f"FAIL: no {kind.__name__} ({text})")


async def main(serial, address):
    device = await BleakScanner.find_device_by_name("Movesense " + serial, timeout=60)
    check(device is not None and device.address == address, f"find_device_by_name: {device}")
    by_address = await BleakScanner.find_device_by_address(address.lower())
    check(by_address == device, f"find_device_by_address: {by_address}")
    found = await BleakScanner.discover(return_adv=True)
    adv = found[address][1]
    check(adv.local_name == "Movesense " + serial, f"advertisement {adv}")
    # The family's platform service, as scanners filter on it.
    check(PLATFORM in adv.service_uuids, f"service UUIDs {adv.service_uuids}")
    check(await BleakScanner.discover(service_uuids=[PLATFORM.upper()]) == [device], "no device with the platform service")
    check(await BleakScanner.discover(timeout=0.3, service_uuids=["180d"]) == [], "a device with the heart rate service")

    # A scanner with a detection callback, started and stopped, as
    # movesense-py scans.
    seen = asyncio.Event()
    scanner = BleakScanner(detection_callback=lambda d, adv: seen.set() if d.name.endswith(serial) else None)
    await scanner.start()
    await seen.wait()
    await scanner.stop()
    check(scanner.discovered_devices == [device], f"discovered {scanner.discovered_devices}")

    await raises(BleakDeviceNotFoundError, "sees: " + address, BleakClient("00:11:22:33:44:55").connect())

    notes = []
    async with BleakClient(address) as first:  # a BLE address, as scripts hard-code them
        check(first.mtu_size == 23, f"mtu_size {first.mtu_size}")
        chars = {c.uuid: c.properties for service in first.services for c in service.characteristics}
        check(chars == {BATTERY_LEVEL: ["read"], COMMAND: ["write", "write-without-response"], DATA: ["notify"]},
              f"characteristics {chars}")
        await first.start_notify(DATA, lambda sender, data: notes.append((sender.uuid, bytes(data))))
        await raises(BleakError, "has a GSP client already", BleakClient(serial).connect())
        await raises(BleakCharacteristicNotFoundError, "serves only its GSP service, 34800001",
                     first.start_notify("2a37", lambda s, d: None))
        await raises(BleakError, "at most 20", first.write_gatt_char(COMMAND, bytes(21)))
        await raises(BleakError, "is not readable", first.read_gatt_char(DATA))
        await raises(BleakError, "does not support notifications", first.start_notify(BATTERY_LEVEL, lambda s, d: None))
        await first.write_gatt_char(COMMAND, bytes([0, 7]), response=True)  # HELLO
        while not notes:
            await asyncio.sleep(0.01)
        check(notes[0][0] == DATA and notes[0][1][:2] == bytes([1, 7]) and len(notes[0][1]) == 20,
              f"HELLO at MTU 23: {notes[0]}")

    # The device ends the connection: the client hears of it.
    ended = asyncio.Event()
    client = BleakClient(device, disconnected_callback=lambda c: ended.set())
    await client.connect()
    await client.start_notify(DATA, lambda s, d: None)
    await client.write_gatt_char(COMMAND, bytes([7, 8, 5]))  # PUT_SYSTEMMODE 5: a reset into the application
    await ended.wait()
    check(not client.is_connected, "connected after the reset")
    await raises(BleakError, "WebSocket close 4000", client.write_gatt_char(COMMAND, bytes([0, 9])))
    await raises(BleakError, "WebSocket close 4000", client.read_gatt_char(BATTERY_LEVEL))
    await client.disconnect()
    print("OK")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
