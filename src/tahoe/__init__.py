"""A Tahoe-LAFS 1.20 compatible, erasure-coded, least-authority file store."""
__all__ = ["util", "crypto", "caps", "immutable"]
