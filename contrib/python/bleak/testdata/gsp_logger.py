"""A GSP client of the kind written for the sensor family's real sensors with
bleak: it finds the sensor by the end of its name, streams, configures the
data logger, logs, lists the logbook, fetches the log over FETCH_LOG,
decodes its SBEM and checks the samples, then clears the logbook.

Usage: gsp_logger.py END_OF_SERIAL [SECONDS_OF_LOGGING]
Exits 0 and prints a JSON summary as its last line when every check passes.
"""

import asyncio
import json
import struct
import sys
import time

from bleak import BleakClient, BleakScanner, discover
from bleak import _logger as logger

WRITE_CHARACTERISTIC_UUID = "34800001-7185-4d5d-b431-630e7050e8f0"
NOTIFY_CHARACTERISTIC_UUID = "34800002-7185-4d5d-b431-630e7050e8f0"

HELLO, SUBSCRIBE, UNSUBSCRIBE, FETCH_LOG, GET, CLEAR_LOGBOOK = 0, 1, 2, 3, 4, 5
PUT_DATALOGGER_CONFIG, PUT_UTCTIME, PUT_DATALOGGER_STATE = 6, 8, 9
COMMAND_RESPONSE, DATA, DATA_PART2, DATA_PART3 = 1, 2, 3, 4


def check(ok, what):
    if not ok:
        raise SystemExit("FAIL: " + what)


class Sensor:
    def __init__(self, client):
        self.client = client
        self.responses = asyncio.Queue()
        self.data = {}  # reference: list of joined payloads
        self.fetch = asyncio.Queue()
        self.disconnected = asyncio.Event()

    async def on_notification(self, sender, data: bytearray):
        code, ref = data[0], data[1]
        if code == COMMAND_RESPONSE:
            await self.responses.put((ref, bytes(data)))
        elif ref == 110:
            await self.fetch.put(bytes(data[2:]))
        elif code == DATA:
            self.data.setdefault(ref, []).append(bytearray(data[2:]))
        elif code in (DATA_PART2, DATA_PART3) and self.data.get(ref):
            self.data[ref][-1] += data[2:]

    async def command(self, payload, ref):
        await self.client.write_gatt_char(WRITE_CHARACTERISTIC_UUID, bytearray(payload), response=True)
        while True:
            got, data = await self.responses.get()
            if got == ref:
                return data

    async def status(self, payload, ref):
        data = await self.command(payload, ref)
        return struct.unpack_from("<H", data, 2)[0], data[4:]


def decode_sbem(blob):
    """Decodes an SBEM file into {path: [values]} by its descriptors."""
    check(blob[:4] == b"SBEM", f"SBEM header {blob[:8]!r}")
    leaves, groups, values = {}, {}, {}
    formats = {"uint8": "B", "int8": "b", "uint16": "H", "int16": "h", "uint32": "I", "int32": "i",
               "uint64": "Q", "int64": "q", "float32": "f", "float64": "d"}
    i = 8
    while i < len(blob):
        cid = blob[i]
        i += 1
        if cid == 0xFF:
            cid = struct.unpack_from("<H", blob, i)[0]
            i += 2
        length = blob[i]
        i += 1
        if length == 0xFF:
            length = struct.unpack_from("<I", blob, i)[0]
            i += 4
        chunk = blob[i:i + length]
        i += length
        if cid == 0:
            did = struct.unpack_from("<H", chunk)[0]
            lines = dict(line.split(">", 1) for line in chunk[2:].decode().splitlines() if ">" in line)
            if "<GRP" in lines:
                groups[did] = [int(x) for x in lines["<GRP"].split(",")]
            elif "<PTH" in lines and "<FRM" in lines:
                leaves[did] = (lines["<PTH"], formats[lines["<FRM"]])
            continue

        def flatten(did):
            if did in leaves:
                return [leaves[did]]
            return [leaf for d in groups.get(did, []) for leaf in flatten(d)]

        off = 0
        for path, fmt in flatten(cid):
            (v,) = struct.unpack_from("<" + fmt, chunk, off)
            off += struct.calcsize(fmt)
            values.setdefault(path.replace("+", "."), []).append(v)
        check(off == len(chunk), f"chunk {cid}: {len(chunk)} bytes, descriptors account for {off}")
    return values


async def main(end_of_serial, seconds):
    # The way the device library's sample finds its sensor.
    devices = await discover()
    check(any(d.name and d.name.endswith(end_of_serial) for d in devices), f"discover: {devices}")
    device = await BleakScanner.find_device_by_filter(
        lambda d, adv: d.name is not None and d.name.endswith(end_of_serial), timeout=60)
    check(device is not None, "no device ending with " + end_of_serial)
    logger.info("found %s", device)

    client = BleakClient(device, disconnected_callback=lambda c: sensor.disconnected.set())
    sensor = Sensor(client)
    async with client:
        check(client.is_connected, "not connected")
        check(client.services.get_characteristic(WRITE_CHARACTERISTIC_UUID) is not None, "no GSP command characteristic")
        await client.start_notify(NOTIFY_CHARACTERISTIC_UUID, sensor.on_notification)

        hello = await sensor.command([HELLO, 100], 100)
        serial = hello[3:].split(b"\0")[0].decode()
        check(serial.endswith(end_of_serial), f"HELLO serial {serial!r}")
        status, _ = await sensor.status(bytearray([PUT_UTCTIME, 108]) + int(time.time() * 1e6).to_bytes(8, "little"), 108)
        check(status == 200, f"PUT_UTCTIME {status}")

        # Live streams.
        status, _ = await sensor.status(bytearray([SUBSCRIBE, 1]) + b"/Meas/Acc/104\0", 1)
        check(status == 200, f"SUBSCRIBE Acc {status}")
        status, _ = await sensor.status(bytearray([SUBSCRIBE, 2]) + b"Meas/ECG/125/mV\0", 2)
        check(status == 200, f"SUBSCRIBE ECG {status}")
        while len(sensor.data.get(1, [])) < 5 or len(sensor.data.get(2, [])) < 3:
            await asyncio.sleep(0.05)
        for ref in (1, 2):
            status, _ = await sensor.status([UNSUBSCRIBE, ref], ref)
            check(status == 200, f"UNSUBSCRIBE {ref}: {status}")
        acc = sensor.data[1]
        check(all((len(p) - 4) % 12 == 0 for p in acc), f"Acc payloads of {[len(p) for p in acc]} bytes")
        ts = [struct.unpack_from("<I", p)[0] for p in acc]
        check(ts == sorted(ts) and len(set(ts)) == len(ts), f"Acc timestamps {ts}")
        ecg = sensor.data[2]
        check(all(len(p) == 4 + 16 * 2 for p in ecg), f"ECG payloads of {[len(p) for p in ecg]} bytes")
        x = struct.unpack_from("<f", acc[0], 4)[0]
        check(-20 < x < 20, f"Acc x {x}")

        # Offline recording.
        status, _ = await sensor.status([CLEAR_LOGBOOK, 106], 106)
        check(status == 200, f"CLEAR_LOGBOOK {status}")
        config = b"/Meas/Acc/52\0/Meas/ECG/125/mV\0/Time/Detailed\0"
        status, _ = await sensor.status(bytearray([PUT_DATALOGGER_CONFIG, 102]) + config, 102)
        check(status == 200, f"PUT_DATALOGGER_CONFIG {status}")
        status, _ = await sensor.status([PUT_DATALOGGER_STATE, 103, 3], 103)
        check(status == 200, f"start logging {status}")
        await asyncio.sleep(seconds)
        status, _ = await sensor.status([PUT_DATALOGGER_STATE, 104, 2], 104)
        check(status == 200, f"stop logging {status}")

        status, listing = await sensor.status(bytearray([GET, 109]) + b"/Mem/Logbook/entries\0", 109)
        check(status == 200 and listing[0] == 1 and len(listing) == 1 + 16, f"entries {status} {listing.hex()}")
        log_id, _, size = struct.unpack_from("<IIQ", listing, 1)

        status, _ = await sensor.status(bytearray([FETCH_LOG, 110]) + log_id.to_bytes(4, "little"), 110)
        check(status == 200, f"FETCH_LOG {status}")
        blob = bytearray(size)
        while True:
            part = await sensor.fetch.get()
            offset = struct.unpack_from("<I", part)[0]
            if len(part) == 4:
                check(offset == size, f"end of log at {offset}, size {size}")
                break
            blob[offset:offset + len(part) - 4] = part[4:]
        values = decode_sbem(bytes(blob))

        summary = {"log": log_id, "bytes": size}
        for stream, field, rate in (("MeasAcc", "MeasAcc.ArrayAcc.x", 52), ("MeasECGmV", "MeasECGmV.Samples", 125)):
            stamps = values.get(f"Samples.Array.{stream}.Timestamp", [])
            n = len(values.get(f"Samples.Array.{field}", []))
            check(len(stamps) >= 2, f"{stream}: {len(stamps)} records")
            # The samples the records' timestamps account for, give or take one record.
            per = n / len(stamps)
            expected = (stamps[-1] - stamps[0]) * rate / 1000 + per
            check(abs(n - expected) <= per + 1, f"{stream}: {n} samples, timestamps account for {expected:.0f}")
            check(n >= rate, f"{stream}: {n} samples in {seconds} s of logging at {rate} Hz")
            summary[stream] = n
        check(len(values.get("Samples.Array.TimeDetailed.utcTime", [])) == 1, "no UTC anchor")

        status, _ = await sensor.status([CLEAR_LOGBOOK, 111], 111)
        check(status == 200, f"CLEAR_LOGBOOK {status}")
        await client.stop_notify(NOTIFY_CHARACTERISTIC_UUID)
    check(not client.is_connected and sensor.disconnected.is_set(), "still connected after the block")
    print(json.dumps(summary))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    asyncio.run(main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 2.0))
