"""UUID spellings: bleak takes 16-bit, 32-bit and 128-bit UUIDs in any case."""

import uuid as _uuid

_BASE = "-0000-1000-8000-00805f9b34fb"


def normalize_uuid_str(u):
    """The 128-bit lower-case form of a UUID written as 4, 8 or 36 hexadecimal characters."""
    u = str(u).strip().lower()
    if len(u) == 4:
        u = "0000" + u + _BASE
    elif len(u) == 8:
        u = u + _BASE
    return str(_uuid.UUID(u))


def normalize_uuid_16(u):
    """The 128-bit form of a 16-bit UUID given as an int."""
    return normalize_uuid_str(f"{u:04x}")
