"""Services as a connected client lists them."""

from ..uuids import normalize_uuid_str


class BleakGATTService:
    """A GATT service with its characteristics."""

    def __init__(self, uuid, handle, characteristics, description=""):
        self.uuid = uuid
        self.handle = handle
        self.description = description
        self.characteristics = list(characteristics)

    def get_characteristic(self, specifier):
        for c in self.characteristics:
            if _matches(c, specifier):
                return c
        return None

    def __str__(self):
        return f"{self.uuid} (Handle: {self.handle}): {self.description}"


class BleakGATTServiceCollection:
    """The services of a connected device: iterate it, or look up by UUID or handle."""

    def __init__(self, services=()):
        self.services = {s.handle: s for s in services}
        self.characteristics = {c.handle: c for s in services for c in s.characteristics}
        self.descriptors = {}

    def __iter__(self):
        return iter(self.services.values())

    def __getitem__(self, key):
        return self.get_service(key) or self.get_characteristic(key)

    def get_service(self, specifier):
        if isinstance(specifier, int):
            return self.services.get(specifier)
        for s in self.services.values():
            if s.uuid == _uuid(specifier):
                return s
        return None

    def get_characteristic(self, specifier):
        for c in self.characteristics.values():
            if _matches(c, specifier):
                return c
        return None


def _uuid(specifier):
    try:
        return normalize_uuid_str(specifier)
    except ValueError:
        return str(specifier)


def _matches(c, specifier):
    if isinstance(specifier, int):
        return c.handle == specifier
    if hasattr(specifier, "uuid"):
        specifier = specifier.uuid
    return c.uuid == _uuid(specifier)
