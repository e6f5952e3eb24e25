"""GL2xx: Python control flow decided by tensor values (or host state) under capture."""
