"""Grid Manager: certificates that say which storage servers a grid's clients use.

Pure cores: ``certificate`` (the signed certificate, its signature and the
client's check of a server's certificates) and ``config`` (the manager's
``config.json``). Formats: ``docs/formats/grid-manager.md``.
"""

__all__ = ["certificate", "config", "errors"]
