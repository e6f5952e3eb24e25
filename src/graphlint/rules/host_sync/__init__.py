"""GL1xx: device-to-host synchronisation inside a capture region."""
