"""The storage client: choosing servers for a file (permuted ring, happiness, share placement)."""
__all__ = ["placement"]
