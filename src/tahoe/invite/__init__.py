"""Invites: hand a new node the grid's introducer and encoding settings over magic-wormhole.

``messages`` (pure) builds and checks the messages of Tahoe-LAFS 1.20's invite
exchange (``docs/formats/invites.md``); ``exchange`` (shell) runs both sides of
it over a wormhole; ``errors`` holds the exceptions.
"""

__all__ = ["errors", "exchange", "messages"]
