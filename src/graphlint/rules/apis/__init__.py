"""GL7xx: library APIs and capture setup."""
