"""The ``veribench`` command line: one module per command group."""
