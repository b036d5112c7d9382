"""The mutable file formats (SDMF, MDMF): keys, share layouts, publish-side encoding,
verifying decode, version choice and the test-and-set write requests."""
__all__ = ["errors", "keys", "version", "hashes", "sdmf", "mdmf", "layout", "encoder", "reader",
           "servermap", "slot_writes"]
