"""Reads a sensor's battery as third-party scripts of the family do: the
standard battery service's Battery Level characteristic, with
read_gatt_char, by its full UUID and by bleak's 16-bit helper; and, to
compare, the level a GSP GET of /System/Energy/Level answers.

Usage: battery.py SERIAL. Prints {"bas": [level, level], "gsp": level,
"status": status} as its last line.
"""

import asyncio
import json
import sys

from bleak import BleakClient, BleakScanner
from bleak.uuids import normalize_uuid_16

BATTERY_LEVEL_UUID = "00002a19-0000-1000-8000-00805f9b34fb"
WRITE_CHARACTERISTIC_UUID = "34800001-7185-4d5d-b431-630e7050e8f0"
NOTIFY_CHARACTERISTIC_UUID = "34800002-7185-4d5d-b431-630e7050e8f0"
GET = 4


async def main(serial):
    device = await BleakScanner.find_device_by_filter(lambda d, adv: (d.name or "").endswith(serial), timeout=60)
    if device is None:
        raise SystemExit(f"no sensor {serial}")
    async with BleakClient(device) as client:
        levels = []
        for uuid in (BATTERY_LEVEL_UUID, normalize_uuid_16(0x2A19)):
            value = await client.read_gatt_char(uuid)
            if len(value) != 1:
                raise SystemExit(f"Battery Level of {len(value)} bytes: {value!r}")
            levels.append(int.from_bytes(value, byteorder="little"))
            print(f"battery: {levels[-1]} %")

        answers = asyncio.Queue()
        await client.start_notify(NOTIFY_CHARACTERISTIC_UUID, lambda sender, data: answers.put_nowait(bytes(data)))
        await client.write_gatt_char(WRITE_CHARACTERISTIC_UUID, bytes([GET, 99]) + b"/System/Energy/Level\0",
                                     response=True)
        while True:
            answer = await asyncio.wait_for(answers.get(), 60)
            if answer[0] == 1 and answer[1] == 99:
                break
    status = int.from_bytes(answer[2:4], "little")
    print(json.dumps({"bas": levels, "gsp": answer[4] if len(answer) > 4 else None, "status": status}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
