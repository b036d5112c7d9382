"""The storage server: share containers on disk, leases, space, and the server's domain object."""
__all__ = ["errors", "paths", "leases", "randomaccess", "immutable_container",
           "mutable_container", "containers", "space", "ranges", "arguments", "advisories",
           "disk", "bucket", "slots", "server", "interfaces"]
