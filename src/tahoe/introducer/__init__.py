"""Grid membership: signed announcements and the acceptance rules of the introducer and its clients."""
__all__ = ["errors", "announcement"]
