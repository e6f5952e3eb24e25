"""graphlint's rules, one module per rule; sub-packages are code families.

Discovery imports every module here (``graphlint.rule.all_checks``): nothing to register.
"""
