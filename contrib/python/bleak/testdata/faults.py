"""A GSP client of the kind written for the sensor family's real sensors
with bleak, facing a field fault that the bridge's API injects into the
sensor (docs/faults.md), as a test harness does: a stalled stream, which
it sees go silent while the link stays up and brings back by subscribing
again, as app authors advise.

Usage: faults.py SERIAL. Prints a JSON summary as its last line.
"""

import asyncio
import json
import os
import struct
import sys
import urllib.request

from bleak import BleakClient, BleakScanner

WRITE_CHARACTERISTIC_UUID = "34800001-7185-4d5d-b431-630e7050e8f0"
NOTIFY_CHARACTERISTIC_UUID = "34800002-7185-4d5d-b431-630e7050e8f0"
SUBSCRIBE, UNSUBSCRIBE, GET = 1, 2, 4
COMMAND_RESPONSE, DATA = 1, 2


def bridge(method, path, body=None):
    """Calls the bridge's API, as a test harness does beside the client."""
    req = urllib.request.Request(os.environ["SENSEBOARD_BRIDGE"] + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + os.environ["SENSEBOARD_TOKEN"]})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


class Sensor:
    def __init__(self, client):
        self.client = client
        self.responses = asyncio.Queue()
        self.data = {}  # reference: queue of payloads

    def on_notification(self, sender, data: bytearray):
        code, ref = data[0], data[1]
        if code == COMMAND_RESPONSE:
            self.responses.put_nowait((ref, bytes(data)))
        elif code == DATA:
            self.data.setdefault(ref, asyncio.Queue()).put_nowait(bytes(data[2:]))

    async def command(self, payload, ref):
        await self.client.write_gatt_char(WRITE_CHARACTERISTIC_UUID, bytearray(payload), response=True)
        while True:
            got, data = await asyncio.wait_for(self.responses.get(), 60)
            if got == ref:
                return struct.unpack_from("<H", data, 2)[0]

    async def subscribe(self, ref, path):
        self.data[ref] = asyncio.Queue()
        status = await self.command(bytes([SUBSCRIBE, ref]) + path.encode() + b"\0", ref)
        if status not in (200, 204):
            raise SystemExit(f"subscribe {path}: {status}")

    async def next(self, ref):
        return await asyncio.wait_for(self.data[ref].get(), 60)


async def main(serial):
    device = await BleakScanner.find_device_by_filter(lambda d, adv: (d.name or "").endswith(serial), timeout=60)
    if device is None:
        raise SystemExit(f"no sensor {serial}")
    summary = {}
    async with BleakClient(device) as client:
        s = Sensor(client)
        await client.start_notify(NOTIFY_CHARACTERISTIC_UUID, s.on_notification)

        # a stalled stream: silent while another one flows and the link stays up
        await s.subscribe(10, "/Meas/Acc/52")
        await s.next(10)
        stall = bridge("POST", f"/api/devices/{serial}/faults", {"fault": "stall", "path": "/Meas/Acc"})
        await s.subscribe(11, "/Meas/Gyro/52")
        for _ in range(20):
            await s.next(11)
        summary["stalled"] = s.data[10].qsize()  # at most what was under way
        summary["link"] = await s.command(bytes([GET, 12]) + b"/Info\0", 12)
        # subscribing again brings it back
        await s.command(bytes([UNSUBSCRIBE, 10]), 10)
        await s.command(bytes([UNSUBSCRIBE, 11]), 11)
        await s.subscribe(13, "/Meas/Acc/52")
        await s.next(13)
        summary["resubscribed"] = True
        truth = bridge("GET", f"/api/devices/{serial}/faults")
        summary["stallEndedBy"] = [f for f in truth if f["id"] == stall["id"]][0]["endedBy"]
        await s.command(bytes([UNSUBSCRIBE, 13]), 13)
    print(json.dumps(summary))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
