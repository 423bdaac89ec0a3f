"""BLEDevice: a device found by a scan."""


class BLEDevice:
    """A device the bridge sees: its BLE address, its name as scripts see it
    (see SENSEBOARD_BLEAK_NAME) and, in details, the bridge's state of it
    (serial number, connection state, advertising packets)."""

    def __init__(self, address, name, details=None, rssi=-50, **kwargs):
        self.address = address
        self.name = name
        self.details = details if details is not None else {}
        self._rssi = rssi
        self.metadata = kwargs.get("metadata", {})

    @property
    def rssi(self):
        """A fixed -50 dBm: the radio link has no signal strength."""
        return self._rssi

    def __str__(self):
        return f"{self.address}: {self.name}"

    def __repr__(self):
        return f"BLEDevice({self.address}, {self.name})"

    def __eq__(self, other):
        return isinstance(other, BLEDevice) and other.address == self.address

    def __hash__(self):
        return hash(self.address)
