"""Run the command line as ``python -m simdup``."""

from simdup.cli import main

main()
