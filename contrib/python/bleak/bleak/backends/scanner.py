"""AdvertisementData: what a device's advertising and scan response packets say."""


class AdvertisementData:
    """The fields of a device's advertisement, read from the packets the
    bridge last saw (its state's adv and scanResp)."""

    def __init__(self, local_name=None, manufacturer_data=None, service_data=None,
                 service_uuids=None, tx_power=None, rssi=-50, platform_data=()):
        self.local_name = local_name
        self.manufacturer_data = manufacturer_data or {}
        self.service_data = service_data or {}
        self.service_uuids = service_uuids or []
        self.tx_power = tx_power
        self.rssi = rssi
        self.platform_data = platform_data

    def __repr__(self):
        fields = [f"local_name={self.local_name!r}"]
        if self.manufacturer_data:
            fields.append(f"manufacturer_data={self.manufacturer_data!r}")
        if self.service_uuids:
            fields.append(f"service_uuids={self.service_uuids!r}")
        if self.tx_power is not None:
            fields.append(f"tx_power={self.tx_power!r}")
        fields.append(f"rssi={self.rssi!r}")
        return f"AdvertisementData({', '.join(fields)})"
