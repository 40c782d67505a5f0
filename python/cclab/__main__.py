"""``python -m cclab`` — the same as the ``cclab`` command."""

from cclab.cli import app

if __name__ == "__main__":
    app(prog_name="cclab")
