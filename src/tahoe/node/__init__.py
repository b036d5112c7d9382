"""The node layer: node directories and their configuration.

``config`` (facade), ``values`` and ``yaml_files`` are pure: they parse and
validate ``tahoe.cfg``, ``private/introducers.yaml`` and ``private/servers.yaml``.
``nodedir`` is the shell that creates node directories and reads them at start.
"""
__all__ = ["errors", "values", "yaml_files", "config", "nodedir"]
