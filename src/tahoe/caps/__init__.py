"""Capability strings: parse and format every cap kind we know, keep the others as text."""
__all__ = ["errors", "immutable", "mutable", "dirnode", "unknown", "parse"]
