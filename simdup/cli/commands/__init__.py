"""One module per command of the ``simdup`` command line."""
