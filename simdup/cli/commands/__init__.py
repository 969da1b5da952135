"""One module per command of the ``simdup`` command line.

A command's module is light to import: it declares the command with the option bundles of
:mod:`simdup.cli.options` and imports the pipeline, numpy and rich inside the functions that
use them, so that declaring every command (``simdup --help``, shell completion) loads none
of them and a run loads what it uses.
"""
