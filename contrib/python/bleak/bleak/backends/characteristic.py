"""BleakGATTCharacteristic: a characteristic of a service, as notification callbacks get it."""


class BleakGATTCharacteristic:
    """A characteristic: its UUID, handle and properties ("write",
    "write-without-response", "notify", ...)."""

    def __init__(self, uuid, handle, properties, service_uuid, description=""):
        self.uuid = uuid
        self.handle = handle
        self.properties = list(properties)
        self.service_uuid = service_uuid
        self.description = description
        self.descriptors = []
        self.obj = None

    @property
    def max_write_without_response_size(self):
        """MTU - 3, set when the client connects."""
        return getattr(self, "_max_write", 20)

    def __str__(self):
        return f"{self.uuid} (Handle: {self.handle}): {self.description}"

    def __repr__(self):
        return f"BleakGATTCharacteristic({self.uuid!r}, handle={self.handle})"
