"""``python -m cclab`` — the same as the ``cclab`` command."""

from cclab._entry import main

if __name__ == "__main__":
    main()
