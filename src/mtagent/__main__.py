"""``python -m mtagent``: the same command as ``mtagent`` (useful where the script is not on PATH)."""

from mtagent.cli.entry import main

if __name__ == "__main__":
    main()
