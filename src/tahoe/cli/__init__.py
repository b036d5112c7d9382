"""The ``tahoe`` command line: thin, standard-library-only clients of the node's gateway."""
__all__ = ["main"]
