"""One module per command group; each exposes a typer app or command functions registered in ``migrate.cli``."""
