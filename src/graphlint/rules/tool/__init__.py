"""GL0xx: files graphlint could not analyse. Reported by the engine, not by a visitor."""
