"""Drive Tahoe-style nodes through the ``tahoe`` command line, for any implementation.

Everything here takes the path of a ``tahoe`` executable, so the same code
creates and runs Tahoe-LAFS 1.20 nodes (:func:`tests.support.tahoe120.ensure_tahoe120`)
and ours (``.venv/bin/tahoe``, see :func:`our_tahoe`).  Only documented CLI
commands, node-directory files and ``tahoe.cfg`` keys are used
(``shared/reference/frontends.md`` §1).

Every listening address is on 127.0.0.1, with ports from
:func:`tests.support.ports.free_port`.  Nodes run in the foreground with
``tahoe run --allow-stdin-close NODEDIR`` and stdin from /dev/null, with their
output in ``<tmp>/logs/<node>.log``, and are stopped by PID.
"""
from __future__ import annotations

import configparser
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from tests.support.ports import free_port
from tests.support.processes import ManagedProcess, ProcessSet, wait_until

__all__ = [
    "CommandFailed",
    "child_env",
    "RunningNode",
    "Shares",
    "TahoeTool",
    "bind_tub_to_loopback",
    "edit_tahoe_cfg",
    "our_tahoe",
    "read_tahoe_cfg",
    "config_for_tests",
]

# Seconds a node may take from `tahoe run` to writing node.url or
# private/introducer.furl (Tahoe 1.20 takes about 1.5 s here).
NODE_START_TIMEOUT = 60.0
# Seconds one CLI call may take (Tahoe 1.20 takes about 1.4 s).
CLI_TIMEOUT = 120.0

_NODE_URL = re.compile(r"https?://127\.0\.0\.1:\d+/\n")
_FURL = re.compile(r"pb://[a-z2-7]+@[^/\s]+/[^/\s]+\n?")


class CommandFailed(RuntimeError):
    """A ``tahoe`` command exited with a non-zero status (its output is in the message)."""


@attrs.frozen
class Shares:
    """Erasure-coding settings: ``needed`` (k) of ``total`` (N), upload needs ``happy`` servers."""

    needed: int
    happy: int
    total: int

    def cli_args(self) -> list[str]:
        """The ``--shares-*`` options of ``tahoe create-node`` / ``create-client``."""
        return [f"--shares-needed={self.needed}", f"--shares-happy={self.happy}",
                f"--shares-total={self.total}"]


def our_tahoe() -> Path:
    """The ``tahoe`` console script of this project (in the venv running the tests)."""
    return Path(sys.prefix) / "bin" / "tahoe"


def _clean_env() -> dict[str, str]:
    """Our environment without what would make another Python see our venv or sources."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env["PYTHONUNBUFFERED"] = "1"  # node logs reach the log file at once
    return env


def child_env() -> dict[str, str]:
    """The environment for a ``tahoe`` program a test starts itself (as :meth:`TahoeTool.cli`
    and :meth:`TahoeTool.start` run theirs): unbuffered, without our venv's variables."""
    return _clean_env()


# ---------------------------------------------------------------- tahoe.cfg


def read_tahoe_cfg(basedir: Path) -> configparser.ConfigParser:
    """Parse ``basedir/tahoe.cfg`` (no interpolation, as Tahoe reads it)."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(basedir / "tahoe.cfg", encoding="utf-8-sig")
    return parser


_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")
_KEY = re.compile(r"^([^#;\s][^=:]*?)\s*[=:]")


def edit_tahoe_cfg(basedir: Path, changes: Mapping[str, Mapping[str, str | None]]) -> None:
    """Set (or, for a value of None, remove) keys in ``basedir/tahoe.cfg``.

    Edits the text in place, keeping comments and order: an existing key is
    replaced where it stands, a new key goes right after its section header,
    and a missing section is appended.

    :param changes: section -> key -> value (None removes the key).
    """
    path = basedir / "tahoe.cfg"
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    pending = {section: dict(keys) for section, keys in changes.items()}
    output: list[str] = []
    section: str | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section = header.group(1).strip()
            output.append(line)
            for key, value in pending.get(section, {}).items():
                if value is not None and not _section_has_key(lines, section, key):
                    output.append(f"{key} = {value}")
            continue
        key_match = _KEY.match(line)
        if section in pending and key_match:
            key = key_match.group(1).strip().lower()
            wanted = {k.lower(): (k, v) for k, v in pending[section].items()}
            if key in wanted:
                name, value = wanted[key]
                if value is not None:
                    output.append(f"{name} = {value}")
                continue
        output.append(line)
    present = {m.group(1).strip() for m in map(_SECTION.match, lines) if m}
    for section, keys in pending.items():
        if section not in present and any(v is not None for v in keys.values()):
            output.extend(["", f"[{section}]"])
            output.extend(f"{k} = {v}" for k, v in keys.items() if v is not None)
    temporary = path.with_name("tahoe.cfg.tmp")
    temporary.write_text("\n".join(output) + "\n", encoding="utf-8")
    temporary.replace(path)


def _section_has_key(lines: Sequence[str], section: str, key: str) -> bool:
    current = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            current = header.group(1).strip()
            continue
        match = _KEY.match(line)
        if current == section and match and match.group(1).strip().lower() == key.lower():
            return True
    return False


def config_for_tests(
    *, storage: bool, force_foolscap: bool = False, client_foolscap: bool = False,
    reserved_space: str = "1M",
) -> dict[str, dict[str, str | None]]:
    """The ``tahoe.cfg`` changes a test node needs (for :func:`edit_tahoe_cfg`).

    * ``[storage]reserved_space``: ``create-node`` writes ``1G``, which would
      make a server on a nearly full CI disk refuse shares; ``1M`` is valid
      (number + K/M/G/T/P/E suffix).
    * ``force_foolscap``: both implementations otherwise use the HTTPS storage
      protocol (servers announce NURLs, clients prefer them); with it, a
      storage server announces no NURLs and a client uses Foolscap.
    * ``client_foolscap``: only the node's client side uses Foolscap
      (``[client] force_foolscap``); its server still offers both protocols.

    :param storage: whether the node runs a storage server.
    """
    changes: dict[str, dict[str, str | None]] = {}
    if force_foolscap or client_foolscap:
        changes["client"] = {"force_foolscap": "true"}
    if storage:
        changes["storage"] = {"reserved_space": reserved_space}
        if force_foolscap:
            changes["storage"]["force_foolscap"] = "true"
    return changes


def bind_tub_to_loopback(basedir: Path) -> None:
    """Make a ``tub.port = tcp:N`` (as ``--hostname`` writes it) listen on 127.0.0.1 only."""
    port = read_tahoe_cfg(basedir).get("node", "tub.port", fallback="")
    match = re.fullmatch(r"(?:tcp:)?(\d+)", port.strip())
    if match:
        edit_tahoe_cfg(basedir, {"node": {"tub.port": f"tcp:{match.group(1)}:interface=127.0.0.1"}})


# ---------------------------------------------------------------- running nodes


@attrs.frozen
class RunningNode:
    """A node started by :meth:`TahoeTool.start`, stopped by its PID.

    :ivar basedir: the node directory.
    :ivar process: the ``tahoe run`` process.
    """

    basedir: Path
    process: ManagedProcess

    @property
    def name(self) -> str:
        """The node directory's last component."""
        return self.basedir.name

    def node_url(self, timeout: float = NODE_START_TIMEOUT) -> str:
        """The web gateway's base URL from ``node.url`` (``http://127.0.0.1:PORT/``), once written.

        :raises WaitTimeout: if it does not appear within ``timeout`` seconds.
        :raises ProcessDied: if the node exits first.
        """
        return wait_until(lambda: _read_matching(self.basedir / "node.url", _NODE_URL),
                          timeout, f"{self.basedir}/node.url",
                          processes=[self.process]).strip()

    def introducer_furl(self, timeout: float = NODE_START_TIMEOUT) -> str:
        """An introducer's FURL from ``private/introducer.furl``, once written (first start)."""
        path = self.basedir / "private" / "introducer.furl"
        return wait_until(lambda: _read_matching(path, _FURL), timeout, str(path),
                          processes=[self.process]).strip()

    def stop(self, timeout: float = 15.0) -> int:
        """Stop the node by PID (SIGTERM, then SIGKILL); returns its exit status."""
        return self.process.stop(timeout)


def _read_matching(path: Path, pattern: re.Pattern[str]) -> str | None:
    """The content of ``path`` if it is complete (matches ``pattern``), else None."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return text if pattern.fullmatch(text) else None


# ---------------------------------------------------------------- the CLI


class TahoeTool:
    """One ``tahoe`` executable (Tahoe-LAFS 1.20's or ours), run as a separate program.

    :param exe: absolute path of the ``tahoe`` executable.
    :param log_dir: where node logs go (``<log_dir>/<node-name>.log``).
    """

    def __init__(self, exe: Path, log_dir: Path) -> None:
        self.exe = exe
        self.log_dir = log_dir

    def __repr__(self) -> str:
        return f"<TahoeTool {self.exe}>"

    def cli(self, *args: str | os.PathLike[str], timeout: float = CLI_TIMEOUT) -> str:
        """Run ``tahoe ARGS...`` to completion, stdin from /dev/null; return its stdout.

        :raises CommandFailed: on a non-zero exit status (message has stdout and stderr).
        """
        argv = [str(self.exe), *(os.fspath(a) for a in args)]
        result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                env=_clean_env(), timeout=timeout)
        if result.returncode != 0:
            raise CommandFailed(f"{' '.join(argv)} exited with {result.returncode}\n"
                                f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
        return result.stdout

    def version(self) -> str:
        """What ``tahoe --version`` prints, stripped (e.g. ``tahoe-lafs/1.20.0``)."""
        return self.cli("--version").strip()

    def create_introducer(self, basedir: Path, *, port: int | None = None,
                          hostname: str | None = None) -> Path:
        """``tahoe create-introducer``: with ``port``, listen on 127.0.0.1:port only.

        Without ``port``, ``--hostname`` is passed (the tool picks the port).
        """
        if port is not None:
            listen = [f"--port=tcp:{port}:interface=127.0.0.1", f"--location=tcp:127.0.0.1:{port}"]
        else:
            listen = [f"--hostname={hostname or '127.0.0.1'}"]
        self.cli("create-introducer", *listen, basedir)
        return basedir

    def create_node(self, basedir: Path, *, introducer_furl: str | None, shares: Shares,
                    nickname: str | None = None, web_port: int | None = None,
                    tub_port: int | None = None, hostname: str | None = None,
                    extra_args: Sequence[str] = ()) -> Path:
        """``tahoe create-node`` (client + storage server).

        :param introducer_furl: written as ``--introducer``; None for a node
            without introducer (static servers only, or a bare storage server).
        :param tub_port: listen on 127.0.0.1:tub_port (``--port``/``--location``);
            if None, ``--hostname`` is passed instead (the tool picks the port and
            listens on every interface: see :func:`bind_tub_to_loopback`).
        :param web_port: the gateway port (a free one if None).
        """
        if tub_port is not None:
            listen = [f"--port=tcp:{tub_port}:interface=127.0.0.1",
                      f"--location=tcp:127.0.0.1:{tub_port}"]
        else:
            listen = [f"--hostname={hostname or '127.0.0.1'}"]
        self.cli("create-node", *listen, *self._client_args(introducer_furl, shares, nickname,
                                                             web_port), *extra_args, basedir)
        return basedir

    def create_client(self, basedir: Path, *, introducer_furl: str | None, shares: Shares,
                      nickname: str | None = None, web_port: int | None = None,
                      extra_args: Sequence[str] = ()) -> Path:
        """``tahoe create-client`` (no storage, no listening tub); no ``--introducer`` if None."""
        self.cli("create-client", *self._client_args(introducer_furl, shares, nickname, web_port),
                 *extra_args, basedir)
        return basedir

    @staticmethod
    def _client_args(introducer_furl: str | None, shares: Shares, nickname: str | None,
                     web_port: int | None) -> list[str]:
        web_port = free_port() if web_port is None else web_port
        args = [f"--webport=tcp:{web_port}:interface=127.0.0.1", *shares.cli_args()]
        if introducer_furl is not None:
            args.insert(0, f"--introducer={introducer_furl}")
        if nickname:
            args.append(f"--nickname={nickname}")
        return args

    def start(self, basedir: Path, processes: ProcessSet,
              prefix: Sequence[str] = ()) -> RunningNode:
        """``tahoe run --allow-stdin-close NODEDIR`` in the background, stdin from /dev/null.

        The process is added to ``processes`` (which stops it); its output goes to
        ``<log_dir>/<node-name>.log``.  Returns at once: wait with
        :meth:`RunningNode.node_url` or :meth:`RunningNode.introducer_furl`.

        :param prefix: a command that execs the rest in place, keeping the PID
            (``ip netns exec NAME``, to run the node in a network namespace).
        """
        process = processes.start(
            [*prefix, self.exe, "run", "--allow-stdin-close", basedir],
            log_path=self.log_dir / f"{basedir.name}.log",
            env=_clean_env(),
        )
        return RunningNode(basedir, process)
