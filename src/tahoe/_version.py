"""The version of this package, kept in one place."""
__version__ = "0.1.0"
