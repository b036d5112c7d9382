"""The web gateway: twisted.web resources over the node's services, and pure JSON shapes."""
__all__ = ["json_shapes", "root", "server"]
