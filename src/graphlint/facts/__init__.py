"""Facts about one file, computed once before the rules run: names, values, regions.

The package itself imports nothing, so that its light tables (``torchapi``,
``guards``) cost no LibCST import; ``analysis`` holds ``FileFacts`` and ``analyse``.
"""
