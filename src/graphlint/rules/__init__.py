"""graphlint's rules, one module per rule; sub-packages are code families.

Discovery (``graphlint.rule.all_checks``) imports every module: nothing to register.
"""
