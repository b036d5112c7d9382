"""The immutable (CHK) file format: segments, zfec, hash trees, UEB, share layout, encode and decode."""
__all__ = ["errors", "params", "keys", "codec", "hashtree", "ueb", "layout", "encoder", "decoder"]
