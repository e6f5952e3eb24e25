"""GL6xx: host-to-device and device-to-host transfers under capture."""
