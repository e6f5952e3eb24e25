"""GL3xx: static memory: rebinding what a captured graph reads."""
