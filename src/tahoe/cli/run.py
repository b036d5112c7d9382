"""``tahoe run [--allow-stdin-close] [NODEDIR]``: run a node in the foreground.

Like Tahoe 1.20 (``reference/frontends.md`` §1.3): prints where it runs,
refuses a directory already in use (``running.process``), stops cleanly on
SIGINT or SIGTERM, and exits when its stdin closes unless
``--allow-stdin-close`` is given. This command (with the local grid) is the
only one that imports Twisted.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from .create_node import expand_home

EXIT_ERROR = 1
#: Seconds a stopping node waits for its connections to close; peers that went
#: silent (a partitioned network) would otherwise hold the exit for minutes.
SHUTDOWN_GRACE = 5.0


def _process_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (Linux), to tell a live node from a reused PID."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_not_running(pidfile: Path) -> str | None:
    """Why the node directory is in use, or None when it is free (stale files are removed)."""
    try:
        pid_text, _, started = pidfile.read_text().strip().partition(" ")
        pid = int(pid_text)
    except (OSError, ValueError):
        return None
    if pid != os.getpid() and _pid_alive(pid) and (
            not started or _process_start_time(pid) in (None, started)):
        return f"node already running (pid {pid}, see {pidfile})"
    pidfile.unlink(missing_ok=True)
    return None


def _parser(stdout: TextIO) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tahoe run", description="Run a node in the foreground.")
    parser.add_argument("-C", "--basedir", help="the node directory")
    parser.add_argument("-d", "--node-directory", help=argparse.SUPPRESS)
    parser.add_argument("--allow-stdin-close", action="store_true",
                        help="keep running when stdin is closed")
    parser.add_argument("nodedir", nargs="?", help="the node directory [default: ~/.tahoe]")
    return parser


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """Run the node until it is stopped; 0 on a clean stop, 1 on an error."""
    try:
        args = _parser(stdout).parse_args(argv)
    except SystemExit as exit_:
        return EXIT_ERROR if exit_.code else 0
    chosen = args.node_directory or args.basedir or args.nodedir or "~/.tahoe"
    basedir = os.path.abspath(expand_home(chosen, env))
    stdout.write(f"'tahoe run' in {basedir}\n")
    from ..node.errors import ConfigError, NodeDirectoryError
    from ..node.nodedir import read_node_directory
    try:
        nodedir = read_node_directory(basedir)
    except NodeDirectoryError as error:
        stderr.write(f"ERROR: {error}\n")
        return EXIT_ERROR
    except ConfigError as error:
        stderr.write(f"Configuration error:\n{error}\n")
        return EXIT_ERROR
    for warning in nodedir.config.warnings:
        stderr.write(f"WARNING: {warning}\n")
    legacy = _legacy_crawler_state(nodedir)
    if legacy:
        stderr.write(f"ERROR: {legacy} is crawler state pickled by Tahoe-LAFS before 1.17;"
                     f" convert it first with: tahoe admin migrate-crawler {basedir}\n")
        return EXIT_ERROR
    pidfile = Path(basedir) / "running.process"
    busy = check_not_running(pidfile)
    if busy:
        stderr.write(f"ERROR: {busy}\n")
        return EXIT_ERROR
    plugins = _unknown_plugins(nodedir.config)
    if plugins:
        stderr.write(f"ERROR: {plugins} enabled in {nodedir.config.filename}, but this"
                     " implementation has no storage plugins: the node does not start (as"
                     " Tahoe-LAFS does not without them) rather than run without what they"
                     " do.\n")
        return EXIT_ERROR
    hidden = _hiding_not_available(nodedir)
    if hidden:
        stderr.write(f"ERROR: {hidden} asks for Tor or I2P, which this implementation does"
                     " not have: rather than connect or listen over plain TCP (revealing this"
                     " computer's IP address), the node does not start.\n")
        return EXIT_ERROR
    from ..node.fileutil import use_temporary_directory
    tempdir = nodedir.config_path(nodedir.config.tempdir)
    try:
        use_temporary_directory(tempdir)
    except OSError as error:
        stderr.write(f"ERROR: the temporary directory {tempdir} ([node]tempdir in tahoe.cfg)"
                     f" cannot be used: {error.strerror or error}\n")
        return EXIT_ERROR
    stdout.write(f"running node in {basedir}\n")
    stdout.flush()
    from ..util.memory import limit_malloc_arenas
    limit_malloc_arenas()  # before any thread starts
    return _run_reactor(nodedir, pidfile, args.allow_stdin_close, stderr)


#: Seconds after a node started at which what start-up made is set aside from the
#: collector (after a gateway node loaded its file code, ``node.service.WARM_UP_DELAY``).
GC_FREEZE_DELAY = 1.0


def _freeze_start_up_objects() -> None:
    """Collect once, then move every object alive to the collector's permanent generation
    (``gc.freeze``): modules, classes and the node's long-lived state are no longer
    scanned by each full collection. Measured on a gateway during 1 kB uploads: a full
    collection paused the reactor 78 ms; 10-19 ms after this."""
    import gc
    gc.collect()
    gc.freeze()


def _unknown_plugins(config: Any) -> str | None:
    """The storage plugins the configuration enables (``[client]storage.plugins``, a
    storage server's ``[storage]plugins``) or needs (a storage server's ``[storage]
    anonymous = false``), if any: none is known here."""
    named = [f"storage plugin {name!r} ([client]storage.plugins)"
             for name in config.client.storage_plugins]
    if config.storage.enabled:
        named += [f"storage server plugin {name!r} ([storage]plugins)"
                  for name in config.storage.plugins]
    if config.storage.enabled and not config.storage.anonymous:
        # Tahoe then offers its storage only through plugins: here, to no one.
        named.append("[storage]anonymous = false (storage offered through plugins only)")
    return ", ".join(named) or None


def _hiding_not_available(nodedir: Any) -> str | None:
    """What in the node's configuration asks for Tor or I2P (to hide its IP address, or
    to listen there), if anything: Tahoe routes such connections through Tor or I2P,
    which this implementation cannot, so it refuses rather than connect directly."""
    config = nodedir.config
    if config.connections_tcp != "tcp":
        return f"{config.filename} [connections]tcp = {config.connections_tcp}"
    if config.tor.onion:
        return f"{config.filename} [tor]onion = true"
    if config.i2p.dest:
        return f"{config.filename} [i2p]dest = true"
    for server in nodedir.static_servers:
        handler = dict(server.connections).get("tcp", "tcp")
        if handler != "tcp":
            return (f"private/servers.yaml: server {server.server_id!r} has connections"
                    f" tcp: {handler}")
    return None


def _legacy_crawler_state(nodedir: Any) -> str | None:
    """The first pickled crawler state file in the node's storage directory, if any."""
    from ..storage.crawl_state import LEGACY_STATE_FILES
    storage = nodedir.config.storage
    if not storage.enabled:
        return None
    storage_dir = Path(nodedir.config_path(storage.storage_dir))
    found = [storage_dir / name for name in LEGACY_STATE_FILES if (storage_dir / name).exists()]
    return str(found[0]) if found else None


def _run_reactor(nodedir: Any, pidfile: Path, allow_stdin_close: bool, stderr: TextIO) -> int:
    from twisted.internet import reactor, stdio
    from twisted.internet.defer import CancelledError, Deferred, TimeoutError
    from twisted.internet.protocol import Protocol
    from twisted.python import log

    from ..node.fileutil import write_atomically
    from ..node.logwriter import BackgroundWriter
    from ..node.service import Node

    log_output = BackgroundWriter(sys.stdout)
    log.startLogging(log_output, setStdout=False)
    started = _process_start_time(os.getpid()) or ""
    try:
        write_atomically(pidfile, f"{os.getpid()} {started}\n")
    except OSError as error:  # the disk full, the directory read-only...
        stderr.write(f"ERROR: the node could not start: cannot write {pidfile}:"
                     f" {error.strerror or error}\n")
        return EXIT_ERROR
    node = Node(nodedir, reactor)
    outcome = {"code": 0}

    def stop(code: int = 0) -> None:
        outcome["code"] = outcome["code"] or code
        if reactor.running:  # type: ignore[attr-defined]
            reactor.stop()  # type: ignore[attr-defined]

    def failed(failure: Any) -> None:
        stderr.write(f"ERROR: the node could not start: {failure.getErrorMessage()}\n")
        log.err(failure, "node start-up failed")
        stop(EXIT_ERROR)

    class StdinWatcher(Protocol):
        def connectionLost(self, reason: Any = None) -> None:  # noqa: N802 (Twisted)
            log.msg("stdin closed; stopping the node (use --allow-stdin-close to keep running)")
            stop()

    def started_ok(_: Any) -> None:
        log.msg(f"node running in {nodedir.basedir}")
        reactor.callLater(GC_FREEZE_DELAY, _freeze_start_up_objects)  # type: ignore[attr-defined]

    def begin() -> None:
        d = Deferred.fromCoroutine(node.start())
        d.addCallbacks(started_ok, failed)
        if not allow_stdin_close:
            stdio.StandardIO(StdinWatcher())

    async def shutdown() -> None:
        stopping = Deferred.fromCoroutine(node.stop())
        stopping.addTimeout(SHUTDOWN_GRACE, reactor)
        try:
            await stopping
        except (TimeoutError, CancelledError):
            log.msg(f"connections still open after {SHUTDOWN_GRACE:g} s; exiting anyway")

    reactor.callWhenRunning(begin)  # type: ignore[attr-defined]
    reactor.addSystemEventTrigger(  # type: ignore[attr-defined]
        "before", "shutdown", lambda: Deferred.fromCoroutine(shutdown()))
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: reactor.callFromThread(stop))  # type: ignore[attr-defined]
    try:
        reactor.run(installSignalHandlers=False)  # type: ignore[attr-defined]
    finally:
        pidfile.unlink(missing_ok=True)
        log_output.close()
    return outcome["code"]
