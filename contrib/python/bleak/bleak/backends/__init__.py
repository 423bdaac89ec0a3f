"""The shapes bleak's backends give: devices, advertisements, services, characteristics."""
