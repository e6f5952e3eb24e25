"""GL0xx: files graphlint could not analyse, reported by the engine."""
