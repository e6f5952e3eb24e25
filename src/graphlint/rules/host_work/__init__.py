"""GL4xx: host work that runs once, at capture, and never on replay."""
