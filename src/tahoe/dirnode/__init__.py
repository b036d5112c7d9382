"""Directories: child tables packed into (mutable or immutable) files, writecap
encryption, metadata rules and the pure directory operations."""
__all__ = ["errors", "children", "packing", "metadata", "ops"]
