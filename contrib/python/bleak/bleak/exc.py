"""Errors of the bleak stand-in, named as bleak names them."""


class BleakError(Exception):
    """Something the stand-in or the bridge could not do; the message says what."""


class BleakDeviceNotFoundError(BleakError):
    """No device the bridge sees has the address, serial number or name given."""

    def __init__(self, identifier, *args):
        self.identifier = identifier
        super().__init__(*(args or (f"Device with address {identifier} was not found.",)))


class BleakCharacteristicNotFoundError(BleakError):
    """A characteristic the device does not serve over the bridge."""

    def __init__(self, char_specifier, *args):
        self.char_specifier = char_specifier
        super().__init__(*(args or (f"Characteristic {char_specifier} was not found!",)))
