"""``tahoe grid start|run|stop|status DIR``: a whole grid on 127.0.0.1, in one command.

``tahoe grid start DIR [--storage-nodes=10] [--shares=3/7/10] [--base-port=N]
[--reserved-space=100M] [--timeout=60] [--foreground]`` creates, the first
time, under DIR:

* ``introducer/`` (``tahoe create-introducer``),
* ``storage1/`` … ``storageN/`` (``tahoe create-node``, nickname = directory name),
* ``client/`` (``tahoe create-client``): the gateway to use,
* ``logs/<node>.log`` (each node's output) and ``grid.json`` (layout and PIDs),

every listening port on 127.0.0.1 (free ports, or ``--base-port`` and the
ports after it: the client's gateway gets ``--base-port`` itself), and
``[storage]reserved_space`` lowered to ``--reserved-space``.  It then runs
every node as ``<python> -m tahoe.cli.main run NODEDIR``: the introducer
first (its FURL exists only once it runs; on later starts all at once), then
all the others at the same time; it waits, polling with a deadline, until
the client's ``GET /?t=json`` shows every storage server connected, and
prints the gateway URL.  ``start`` then returns and leaves the nodes running
(``tahoe grid stop DIR`` stops them by their recorded PIDs); ``run`` (or
``start --foreground``) stays until SIGINT or SIGTERM and then stops them.  A
node that exits during start-up is reported with the end of its log, and the
other nodes are stopped.

The node directories are made in-process by our own create commands
(imported only here); this command does not import Twisted.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import random
import shlex
import signal
import socket
import time
from collections.abc import Mapping
from typing import Any, TextIO

from .errors import CLIError, UsageError
from .gateway import ArgumentParser, Gateway, HelpShown, report
from .grid_processes import (GRID_FILE, GridFileError, NodeFailed, NodeRecord, WaitTimeout,
                             read_grid_file, spawn, stop_nodes, wait_until, write_grid_file)

__all__ = ["run", "default_shares", "parse_shares", "PortSource", "set_config_value"]

DEFAULT_STORAGE_NODES = 10
MAX_STORAGE_NODES = 100
DEFAULT_RESERVED_SPACE = "100M"
START_TIMEOUT = 60.0
EXIT_INTERRUPTED = 130


class GridError(CLIError):
    """The grid cannot be created, started or stopped (the message says why)."""


class _Terminated(Exception):
    """SIGTERM or SIGHUP arrived."""


# ---------------------------------------------------------------- settings


def default_shares(storage_nodes: int) -> tuple[int, int, int]:
    """Tahoe's 3/7/10, shrunk to fit ``storage_nodes`` servers (needed/happy/total).

    1 server: 1/1/1; 2: 1/2/2; 3: 2/3/3; 4: 3/4/4; … 7: 3/7/7; 10 and more: 3/7/10.
    """
    total = min(10, storage_nodes)
    happy = min(7, total)
    needed = min(3, max(1, happy - 1))
    return needed, happy, total


def parse_shares(text: str) -> tuple[int, int, int]:
    """``K/H/N`` (needed/happy/total) with 1 <= K <= H <= N <= 256.

    :raises ValueError: otherwise.
    """
    parts = text.split("/")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"--shares must look like NEEDED/HAPPY/TOTAL (e.g. 3/7/10), not {text!r}")
    needed, happy, total = (int(p) for p in parts)
    if not 1 <= needed <= happy <= total <= 256:
        raise ValueError("--shares must satisfy 1 <= needed <= happy <= total <= 256")
    return needed, happy, total


class PortSource:
    """Hands out TCP ports that are free on 127.0.0.1, each once.

    :param base_port: hand out ``base_port``, ``base_port + 1``, … (a busy one is
        an error); without it, random ports below the kernel's ephemeral range,
        so that no ``bind(0)`` or outgoing connection takes one before its node
        binds it.
    """

    def __init__(self, base_port: int | None = None, seed: int | None = None) -> None:
        self._next = base_port
        self._random = random.Random(seed)
        self._given: set[int] = set()
        low = 32768
        try:
            with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
                low = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
        self._range = (10000, low - 1) if low - 10000 >= 2000 else (20000, 32767)

    @staticmethod
    def _free(port: int) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                return False
        return True

    def take(self) -> int:
        """The next port.

        :raises GridError: if a ``--base-port`` port is busy or none is found.
        """
        if self._next is not None:
            port, self._next = self._next, self._next + 1
            if port > 65535 or not self._free(port):
                raise GridError(f"Error: port {port} on 127.0.0.1 is not available; choose"
                                " another --base-port")
            return port
        for _ in range(1000):
            port = self._random.randint(*self._range)
            if port not in self._given and self._free(port):
                self._given.add(port)
                return port
        raise GridError("Error: found no free TCP port on 127.0.0.1")


def set_config_value(path: str, section: str, key: str, value: str) -> None:
    """Set ``key = value`` in ``[section]`` of the ``tahoe.cfg`` at ``path``, keeping the rest.

    Replaces the key where it stands, or adds it right after the section's header
    (appending the section if needed).
    """
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    current, header_at, done = None, None, False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            current = stripped[1:-1].strip()
            if current == section:
                header_at = i
            continue
        name = stripped.split("=", 1)[0].strip().lower() if "=" in stripped else None
        if current == section and name == key.lower() and not stripped.startswith("#"):
            lines[i] = f"{key} = {value}"
            done = True
    if not done:
        if header_at is None:
            lines += ["", f"[{section}]", f"{key} = {value}"]
        else:
            lines.insert(header_at + 1, f"{key} = {value}")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


# ---------------------------------------------------------------- creating


def _plan(storage_nodes: int, ports: PortSource) -> list[NodeRecord]:
    client = NodeRecord("client", "client", web_port=ports.take(), tub_port=None)
    introducer = NodeRecord("introducer", "introducer", web_port=None, tub_port=ports.take())
    storage = [NodeRecord(f"storage{i}", "storage", web_port=ports.take(), tub_port=ports.take())
               for i in range(1, storage_nodes + 1)]
    return [introducer, *storage, client]


def _create_node(node: NodeRecord, shares: tuple[int, int, int], reserved_space: str,
                 env: Mapping[str, str]) -> None:
    """Make ``node``'s directory with our create command, run in-process."""
    from . import create_node  # imported only when a grid is created
    listen = [f"--port=tcp:{node.tub_port}:interface=127.0.0.1",
              f"--location=tcp:127.0.0.1:{node.tub_port}"]
    common = [f"--nickname={node.name}", f"--webport=tcp:{node.web_port}:interface=127.0.0.1",
              *(f"--shares-{name}={value}"
                for name, value in zip(("needed", "happy", "total"), shares))]
    argv = {"introducer": ["create-introducer", *listen],
            "storage": ["create-node", *listen, *common],
            "client": ["create-client", *common]}[node.role]
    out, err = io.StringIO(), io.StringIO()
    code = create_node.run_create(argv[0], [*argv[1:], node.basedir], out, err, env)
    if code != 0:
        raise GridError(f"Error: tahoe {' '.join(argv)} {node.basedir} failed:\n"
                        f"{err.getvalue()}{out.getvalue()}")
    if node.role == "storage":
        set_config_value(os.path.join(node.basedir, "tahoe.cfg"), "storage",
                         "reserved_space", reserved_space)


def _write_introducer(node: NodeRecord, furl: str) -> None:
    from ..node.nodedir import render_introducers_yaml
    path = os.path.join(node.basedir, "private", "introducers.yaml")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(render_introducers_yaml({"default": furl}))
    os.replace(path + ".tmp", path)


def _new_grid(grid_dir: str, args: argparse.Namespace,
              stdout: TextIO) -> tuple[dict[str, Any], list[NodeRecord]]:
    """Plan a new grid in ``grid_dir`` (which must be missing or empty) and write grid.json."""
    if os.path.exists(grid_dir) and (not os.path.isdir(grid_dir) or os.listdir(grid_dir)):
        raise GridError(f"Error: {grid_dir} exists, is not empty and holds no local grid"
                        f" ({GRID_FILE}); choose another directory")
    count = args.storage_nodes or DEFAULT_STORAGE_NODES
    shares = args.shares or default_shares(count)
    if shares[1] > count:
        raise UsageError(f"Error: --shares {'/'.join(map(str, shares))} needs at least"
                         f" {shares[1]} storage nodes (happy), but the grid has {count}")
    nodes = _plan(count, PortSource(args.base_port))
    os.makedirs(os.path.join(grid_dir, "logs"), exist_ok=True)
    settings = {"storage_nodes": count, "shares": list(shares),
                "reserved_space": args.reserved_space, "introducer_furl": None,
                "gateway": f"http://127.0.0.1:{nodes[-1].web_port}/"}
    for node in nodes:
        node.grid_dir = grid_dir
    write_grid_file(grid_dir, settings, nodes)
    stdout.write(f"Creating a local grid in {grid_dir}: an introducer, {count} storage"
                 f" node{'s' if count > 1 else ''} and a client; shares"
                 f" {'/'.join(map(str, shares))} (needed/happy/total), reserved_space"
                 f" {args.reserved_space}.\n")
    stdout.flush()
    return settings, nodes


# ---------------------------------------------------------------- starting


def _connected_servers(url: str) -> list[str]:
    """Nicknames of the storage servers the gateway at ``url`` is connected to."""
    with Gateway(url, timeout=10.0).request("GET", "?t=json", context="Error") as response:
        if response.status != 200:
            return []
        listing = json.loads(response.read())
    return [str(server.get("nickname")) for server in listing.get("servers", [])
            if str(server.get("connection_status", "")).lower().startswith("connected")]


def _read_furl(node: NodeRecord) -> str | None:
    with open(os.path.join(node.basedir, "private", "introducer.furl")) as f:
        text = f.read().strip()
    return text if text.startswith("pb://") and "/" in text[5:] else None


def _start_nodes(grid_dir: str, settings: dict[str, Any], nodes: list[NodeRecord],
                 env: Mapping[str, str], deadline: float, hold_stdin: bool) -> str:
    """Create what is missing, start every node, wait until the grid works; the gateway URL."""
    introducer, others = nodes[0], nodes[1:]
    for node in nodes:  # a node.url left by the last run would say "ready" too early
        try:
            os.unlink(os.path.join(node.basedir, "node.url"))
        except FileNotFoundError:
            pass
    needed, happy, total = settings["shares"]
    shares = (int(needed), int(happy), int(total))
    if not os.path.exists(os.path.join(introducer.basedir, "tahoe.cfg")):
        _create_node(introducer, shares, settings["reserved_space"], env)
    if settings.get("introducer_furl"):
        for node in nodes:
            spawn(node, env, hold_stdin=hold_stdin)
        write_grid_file(grid_dir, settings, nodes)
    else:
        # First start: the introducer's FURL exists only once it runs. Make the
        # other node directories meanwhile.
        spawn(introducer, env, hold_stdin=hold_stdin)
        write_grid_file(grid_dir, settings, nodes)
        for node in others:
            if not os.path.exists(os.path.join(node.basedir, "tahoe.cfg")):
                _create_node(node, shares, settings["reserved_space"], env)
        settings["introducer_furl"] = wait_until(
            lambda: _read_furl(introducer), "the introducer's FURL", deadline, [introducer])
        for node in others:
            _write_introducer(node, settings["introducer_furl"])
        for node in others:
            spawn(node, env, hold_stdin=hold_stdin)
        write_grid_file(grid_dir, settings, nodes)
    client = nodes[-1]
    url = wait_until(client.url, "the client's node.url", deadline, nodes)
    wanted = settings["storage_nodes"]

    def all_connected() -> bool:
        try:
            return len(_connected_servers(url)) >= wanted
        except CLIError:  # not listening yet
            return False

    wait_until(all_connected, f"the client to connect to {wanted} storage servers", deadline,
               nodes)
    return url


def _start(grid_dir: str, args: argparse.Namespace, env: Mapping[str, str], stdout: TextIO,
           stderr: TextIO, foreground: bool) -> int:
    started = time.monotonic()
    try:
        settings, nodes = read_grid_file(grid_dir)
        running = [node.name for node in nodes if node.running()]
        if running:
            if len(running) == len(nodes):
                stdout.write(f"The grid in {grid_dir} is already running; its gateway is"
                             f" {settings.get('gateway')}\n")
                return 0
            raise GridError(f"Error: some nodes of the grid in {grid_dir} are still running"
                            f" ({', '.join(running)}); stop them first with:"
                            f" tahoe grid stop {shlex.quote(grid_dir)}")
        ignored = [f"--{name.replace('_', '-')}" for name in ("storage_nodes", "shares",
                                                             "base_port")
                   if getattr(args, name) is not None]
        if ignored:
            stderr.write(f"Note: the grid in {grid_dir} exists already; {', '.join(ignored)}"
                         " ignored.\n")
        stdout.write(f"Starting the local grid in {grid_dir}.\n")
    except GridFileError:
        settings, nodes = _new_grid(grid_dir, args, stdout)
    stdout.flush()

    deadline = started + args.timeout
    try:
        url = _start_nodes(grid_dir, settings, nodes, env, deadline, hold_stdin=foreground)
    except (NodeFailed, WaitTimeout, KeyboardInterrupt, _Terminated, OSError, CLIError) as e:
        _ignore_interrupts()
        stderr.write(_failure_text(e, nodes, grid_dir))
        stderr.flush()
        stop_nodes(nodes)
        write_grid_file(grid_dir, settings, nodes)
        stderr.write("Stopped the nodes of the grid.\n")
        return EXIT_INTERRUPTED if isinstance(e, (KeyboardInterrupt, _Terminated)) else 1
    settings["gateway"] = url
    write_grid_file(grid_dir, settings, nodes)
    _print_ready(stdout, grid_dir, settings, url, time.monotonic() - started, foreground)
    if not foreground:
        return 0
    return _serve(grid_dir, settings, nodes, stdout, stderr)


def _failure_text(error: BaseException, nodes: list[NodeRecord], grid_dir: str) -> str:
    if isinstance(error, NodeFailed):
        node = error.node
        return (f"Error: node {node.name} exited with status {error.status} while the grid"
                f" was starting. The end of its log ({node.log_path}):\n{node.log_tail()}\n")
    if isinstance(error, WaitTimeout):
        client = nodes[-1]
        return (f"Error: timed out waiting for {error}. The end of the client's log"
                f" ({client.log_path}):\n{client.log_tail()}\n"
                f"The other nodes' logs are in {os.path.join(grid_dir, 'logs')}.\n")
    if isinstance(error, (KeyboardInterrupt, _Terminated)):
        return "Interrupted while the grid was starting.\n"
    if isinstance(error, OSError):
        return f"Error: cannot start the nodes: {error}\n"
    return f"{error}\n"


def _print_ready(stdout: TextIO, grid_dir: str, settings: Mapping[str, Any], url: str,
                 seconds: float, foreground: bool) -> None:
    count = settings["storage_nodes"]
    client_dir = shlex.quote(os.path.join(grid_dir, "client"))
    stdout.write(
        f"Grid ready in {seconds:.1f} s: {count} storage server{'s' if count > 1 else ''}"
        f" connected, shares {'/'.join(map(str, settings['shares']))}.\n"
        f"Gateway (web API and browser): {url}\n"
        f"Try it:\n"
        f"  tahoe -d {client_dir} put FILE          # prints the file's cap\n"
        f"  tahoe -d {client_dir} get CAP [LOCAL]\n"
        f"Logs: {os.path.join(grid_dir, 'logs')}\n")
    if foreground:
        stdout.write("Press Ctrl-C to stop the grid.\n")
    else:
        stdout.write(f"Stop it with: tahoe grid stop {shlex.quote(grid_dir)}\n")
    stdout.flush()


def _wait_for_a_child() -> None:
    """Block until some child process has exited (without reaping it), or a signal handler
    raises."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
    except (AttributeError, ChildProcessError):
        time.sleep(0.5)  # no waitid (or no child): fall back to polling


def _serve(grid_dir: str, settings: dict[str, Any], nodes: list[NodeRecord], stdout: TextIO,
           stderr: TextIO) -> int:
    """Stay until SIGINT/SIGTERM or until a node exits; then stop every node."""
    try:
        while all(node.running() for node in nodes):
            _wait_for_a_child()
    except (KeyboardInterrupt, _Terminated):
        _ignore_interrupts()
        stdout.write("Stopping the grid...\n")
        stdout.flush()
        stop_nodes(nodes)
        write_grid_file(grid_dir, settings, nodes)
        stdout.write("Stopped.\n")
        return 0
    gone = [node for node in nodes if not node.running()]
    failed = [node for node in gone if node.exit_status() not in (0, None)]
    for node in failed:
        stderr.write(f"Error: node {node.name} exited with status {node.exit_status()}."
                     f" The end of its log ({node.log_path}):\n{node.log_tail()}\n")
    if not failed:
        stdout.write(f"Node {gone[0].name} stopped; stopping the grid.\n")
    stop_nodes(nodes)
    write_grid_file(grid_dir, settings, nodes)
    return 1 if failed else 0


# ---------------------------------------------------------------- stop, status


def _stop(grid_dir: str, timeout: float, stdout: TextIO) -> int:
    settings, nodes = read_grid_file(grid_dir)
    stopped = stop_nodes(nodes, timeout)
    write_grid_file(grid_dir, settings, nodes)
    left = [node.name for node in nodes if node.running()]
    if left:
        raise GridError(f"Error: could not stop {', '.join(left)}")
    if stopped:
        stdout.write(f"Stopped {len(stopped)} node{'s' if len(stopped) > 1 else ''} of the grid"
                     f" in {grid_dir}.\n")
    else:
        stdout.write(f"The grid in {grid_dir} was not running.\n")
    return 0


def _status(grid_dir: str, stdout: TextIO) -> int:
    settings, nodes = read_grid_file(grid_dir)
    stdout.write(f"Local grid in {grid_dir}: {settings.get('storage_nodes')} storage nodes,"
                 f" shares {'/'.join(map(str, settings.get('shares', [])))}\n")
    running = 0
    for node in nodes:
        alive = node.running()
        running += alive
        state = f"running (pid {node.pid})" if alive else "stopped"
        url = node.url() if alive and node.web_port else None
        stdout.write(f"  {node.name:<12} {state:<22} {url or ''}\n")
    client = nodes[-1]
    if running == len(nodes) and (url := client.url()):
        try:
            connected = _connected_servers(url)
        except (CLIError, OSError, ValueError) as e:
            stdout.write(f"Gateway {url} does not answer: {e}\n")
            return 1
        wanted = settings.get("storage_nodes")
        stdout.write(f"Gateway: {url} ({len(connected)} of {wanted} storage servers"
                     " connected)\n")
        return 0 if wanted is not None and len(connected) >= wanted else 1
    stdout.write("The grid is not running.\n" if running == 0 else
                 f"The grid is only partly running ({running} of {len(nodes)} nodes).\n")
    return 1


# ---------------------------------------------------------------- the command


def _parser(stdout: TextIO) -> ArgumentParser:
    parser = ArgumentParser(stdout, prog="tahoe grid",
                            description="A local grid on 127.0.0.1: an introducer, storage"
                            " nodes and a client gateway, each a 'tahoe run' process.")
    parser.add_argument("-d", "--node-directory", help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="action", metavar="ACTION", required=True,
                                     parser_class=ArgumentParser)
    for name, text in (("start", "create (the first time) and start the grid, then return"),
                       ("run", "like start --foreground: stay until Ctrl-C, then stop it")):
        sub = commands.add_parser(name, stdout=stdout, help=text, description=text)
        sub.add_argument("--storage-nodes", type=_count, metavar="N",
                         help=f"number of storage nodes of a new grid [{DEFAULT_STORAGE_NODES}]")
        sub.add_argument("--shares", type=_shares, metavar="K/H/N",
                         help="needed/happy/total shares of a new grid [3/7/10, less for"
                         " fewer than 10 storage nodes]")
        sub.add_argument("--base-port", type=_port, metavar="PORT",
                         help="use PORT (the client's gateway) and the ports after it for a"
                         " new grid [free ports]")
        sub.add_argument("--reserved-space", type=_size, default=DEFAULT_RESERVED_SPACE,
                         metavar="SIZE", help="[storage]reserved_space of a new grid's storage"
                         " nodes [%(default)s]")
        sub.add_argument("--timeout", type=float, default=START_TIMEOUT, metavar="SECONDS",
                         help="give up starting after this long [%(default)g]")
        if name == "start":
            sub.add_argument("--foreground", action="store_true",
                             help="stay in the foreground until Ctrl-C or SIGTERM, then stop"
                             " the grid")
        sub.add_argument("directory", metavar="DIR")
    stop = commands.add_parser("stop", stdout=stdout, help="stop the grid's nodes (by PID)")
    stop.add_argument("--timeout", type=float, default=15.0, metavar="SECONDS",
                      help="SIGKILL nodes still running after this long [%(default)g]")
    stop.add_argument("directory", metavar="DIR")
    status = commands.add_parser("status", stdout=stdout, help="show the grid's nodes")
    status.add_argument("directory", metavar="DIR")
    return parser


def _count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_STORAGE_NODES:
        raise argparse.ArgumentTypeError(f"must be a number from 1 to {MAX_STORAGE_NODES}")
    return int(text)


def _shares(text: str) -> tuple[int, int, int]:
    try:
        return parse_shares(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _port(text: str) -> int:
    if not text.isdigit() or not 1024 <= int(text) <= 65000:
        raise argparse.ArgumentTypeError("must be a port number from 1024 to 65000")
    return int(text)


def _size(text: str) -> str:
    from ..node.values import parse_size
    try:
        parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _raise_terminated(signum: int, frame: Any) -> None:
    raise _Terminated()


def _ignore_interrupts() -> None:
    """While the nodes are being stopped, a second Ctrl-C or SIGTERM must not cut that short."""
    try:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
    except ValueError:
        pass  # not the main thread


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe grid ACTION DIR``: 0 on success; 1 on an error (or, for ``status``, unless every
    node runs and the gateway sees every storage server); 130 when interrupted while starting."""
    parser = _parser(stdout)
    # Signal handlers as they were, restored at the end (for in-process callers).
    previous = {signum: signal.getsignal(signum)
                for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        args = parser.parse_args(argv)
        grid_dir = os.path.abspath(os.path.expanduser(args.directory))
        if args.action == "stop":
            return _stop(grid_dir, args.timeout, stdout)
        if args.action == "status":
            return _status(grid_dir, stdout)
        try:
            for signum in (signal.SIGTERM, signal.SIGHUP):
                signal.signal(signum, _raise_terminated)
            # Ctrl-C must work even when started by a shell that ignores SIGINT for
            # its background jobs (the ignored disposition would be inherited).
            signal.signal(signal.SIGINT, signal.default_int_handler)
        except ValueError:
            pass  # not the main thread: keep the default handlers
        foreground = args.action == "run" or args.foreground
        return _start(grid_dir, args, env, stdout, stderr, foreground)
    except HelpShown:
        return 0
    except GridFileError as error:
        return report(GridError(f"Error: {error}"), stderr)
    except CLIError as error:
        return report(error, stderr)
    finally:
        try:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        except (ValueError, TypeError):
            pass  # not the main thread, or a handler not set from Python
