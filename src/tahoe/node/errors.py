"""Errors of the node layer: bad ``tahoe.cfg``, YAML files and node directories.

Every message names the file, and where it applies the section and key, then the
problem, in the spirit of Tahoe's
``'…/tahoe.cfg' section [client] contains unknown option 'bogus.key'``.
"""
from __future__ import annotations

from collections.abc import Iterable


def _where(filename: str, section: str | None, key: str | None) -> str:
    if section is None:
        return f"'{filename}'"
    if key is None:
        return f"'{filename}' section [{section}]"
    return f"'{filename}' [{section}]{key}"


class ConfigError(ValueError):
    """Root of every node-configuration error.

    :ivar filename: the file at fault, as the caller named it.
    :ivar section: the ``tahoe.cfg`` section, or ``None``.
    :ivar key: the key inside ``section`` (lower case), or ``None``.
    :ivar problem: what is wrong, without the location.
    """

    def __init__(self, filename: str, problem: str, section: str | None = None,
                 key: str | None = None, *, message: str | None = None) -> None:
        super().__init__(message or f"{_where(filename, section, key)}: {problem}")
        self.filename = filename
        self.section = section
        self.key = key
        self.problem = problem


class UnreadableConfig(ConfigError):
    """A configuration file exists but cannot be read (permissions, not a file, I/O error)."""


class MalformedConfigFile(ConfigError):
    """The file is not valid INI or YAML, or not UTF-8 text."""


class UnknownSection(ConfigError):
    """``tahoe.cfg`` has a section this kind of node does not know (fatal, as in Tahoe)."""

    def __init__(self, filename: str, section: str) -> None:
        super().__init__(filename, f"contains unknown section [{section}]", section,
                         message=f"'{filename}' contains unknown section [{section}]")


class UnknownOption(ConfigError):
    """A known section of ``tahoe.cfg`` has a key this node does not know (fatal)."""

    def __init__(self, filename: str, section: str, key: str) -> None:
        super().__init__(
            filename, f"contains unknown option '{key}'", section, key,
            message=f"'{filename}' section [{section}] contains unknown option '{key}'")


class BadValue(ConfigError):
    """A key's value cannot be parsed: not a boolean, integer, size, endpoint, date, …"""


class MissingValue(ConfigError):
    """A key that the other settings make mandatory is absent or empty."""


class InconsistentConfig(ConfigError):
    """Values valid one by one contradict each other (k > N, storage without a tub, …)."""


class TubNotListening(InconsistentConfig):
    """Storage, the helper or an introducer is enabled, but ``tub.port = disabled``."""


class PrivacyError(InconsistentConfig):
    """``reveal-IP-address = false`` but the configuration could reveal the IP address."""


class OldConfigError(ConfigError):
    """The node directory holds pre-1.3 single-value configuration files.

    :ivar names: the offending file names, sorted.
    """

    def __init__(self, basedir: str, names: Iterable[str]) -> None:
        self.names = tuple(sorted(names))
        listed = ", ".join(f"'{n}'" for n in self.names)
        super().__init__(
            basedir,
            f"found configuration file(s) of Tahoe-LAFS before 1.3: {listed}; "
            "move their settings into tahoe.cfg (or private/introducers.yaml) and delete them")


class IntroducerConflict(InconsistentConfig):
    """Petname ``default`` is defined by ``[client]introducer.furl`` and introducers.yaml."""


class NodeDirectoryError(ValueError):
    """Root of the errors about a node directory as a whole (not about one file's content)."""


class DirectoryNotEmpty(NodeDirectoryError):
    """``tahoe create-*`` was asked to write into an existing, non-empty directory.

    :ivar basedir: the directory, absolute.
    """

    def __init__(self, basedir: str) -> None:
        super().__init__(f"The base directory {basedir!r} is not empty.")
        self.basedir = basedir


class NotANodeDirectory(NodeDirectoryError):
    """The directory is missing, or has no ``tahoe-client.tac``/``tahoe-introducer.tac``."""
