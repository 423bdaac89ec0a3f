"""Streams a few accelerometer samples from a sensor over GSP with bleak.

Written as for the family's real sensors: it finds the sensor whose name ends
with the serial given, says HELLO, subscribes to /Meas/Acc/13 and prints the
samples of five notifications, then unsubscribes. With the stand-in on
PYTHONPATH it runs against senseboard, unmodified:

    PYTHONPATH=contrib/python/bleak python3 contrib/python/bleak/example.py 000123
"""

import asyncio
import struct
import sys

from bleak import BleakClient, BleakScanner

WRITE = "34800001-7185-4d5d-b431-630e7050e8f0"   # GSP command characteristic
NOTIFY = "34800002-7185-4d5d-b431-630e7050e8f0"  # GSP data characteristic
HELLO, SUBSCRIBE, UNSUBSCRIBE = 0, 1, 2
COMMAND_RESPONSE, DATA = 1, 2


async def main(serial):
    device = await BleakScanner.find_device_by_filter(
        lambda d, adv: (d.name or "").endswith(serial), timeout=10)
    if device is None:
        sys.exit(f"no sensor whose name ends with {serial}")
    answers, samples = asyncio.Queue(), asyncio.Queue()

    def on_notify(_, data: bytearray):
        if data[0] == COMMAND_RESPONSE:
            answers.put_nowait(bytes(data))
        elif data[0] == DATA and data[1] == 1:  # the subscription's reference
            samples.put_nowait(bytes(data[2:]))

    async with BleakClient(device) as client:
        async def command(payload):
            await client.write_gatt_char(WRITE, payload, response=True)
            return await answers.get()

        await client.start_notify(NOTIFY, on_notify)
        hello = await command(bytes([HELLO, 99]))
        print("hello:", hello[3:].split(b"\0")[:2])  # serial and product name
        answer = await command(bytes([SUBSCRIBE, 1]) + b"/Meas/Acc/13\0")
        status = struct.unpack_from("<H", answer, 2)[0]
        if status != 200:
            sys.exit(f"SUBSCRIBE /Meas/Acc/13: status {status}")
        for _ in range(5):
            data = await samples.get()
            timestamp, = struct.unpack_from("<I", data)
            xyz = struct.iter_unpack("<3f", data[4:])
            print(timestamp, ["%.2f %.2f %.2f" % v for v in xyz])
        await command(bytes([UNSUBSCRIBE, 1]))
        await client.stop_notify(NOTIFY)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else ""))
