"""The runtime checker (``graphlint confirm``): real captures of marked regions on a
GPU. Needs ``torch-graphlint[runtime]``; nothing here is imported by ``check``."""
