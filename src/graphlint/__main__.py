"""python -m graphlint."""

from graphlint.cli import main

main()
