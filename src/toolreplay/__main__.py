"""``python -m toolreplay``."""

from toolreplay.cli import main

# Guarded: worker processes (spawned for large files and many-file checks) import the
# main module again, and must not run the command a second time.
if __name__ == "__main__":
    main()
