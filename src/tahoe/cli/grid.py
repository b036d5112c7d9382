"""``tahoe grid start|run|stop|status|restart DIR``: a whole grid on 127.0.0.1, in one command.

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
nodes this command started are stopped.

A grid is for trying things, server failures included: ``start`` (or ``run``)
on a grid of which some nodes run starts only the others; a grid served in
the foreground keeps serving when a node exits (it names the node, shows the
end of its log and how to bring it back); and ``tahoe grid restart DIR NODE``
stops one node if it runs, starts it again in the background and waits until
it serves (a foreground ``run`` takes it over, and stops it with the rest).

The node directories are made by :mod:`.grid_create`; this command does not
import Twisted.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from .errors import CLIError
from .gateway import ArgumentParser, Gateway, HelpShown, report
from .grid_create import (DEFAULT_STORAGE_NODES, GridError, PortSource, create_node_directory,
                          default_shares, new_grid, parse_shares, set_config_value,
                          write_introducer)
from .grid_processes import (GridFileError, NodeFailed, NodeRecord, WaitTimeout,
                             read_grid_file, spawn, stop_nodes, update_node_record, wait_until,
                             write_grid_file)

__all__ = ["run", "default_shares", "parse_shares", "PortSource", "set_config_value"]

MAX_STORAGE_NODES = 100
#: Seconds between two looks at the nodes of a grid served in the foreground.
SERVE_POLL = 0.5
DEFAULT_RESERVED_SPACE = "100M"
START_TIMEOUT = 60.0
EXIT_INTERRUPTED = 130


class _Terminated(Exception):
    """SIGTERM or SIGHUP arrived."""


# ---------------------------------------------------------------- starting


def _connected_servers(url: str) -> list[str]:
    """Nicknames of the storage servers the gateway at ``url`` is connected to."""
    with Gateway(url, timeout=10.0).request("GET", "?t=json", context="Error") as response:
        if response.status != 200:
            return []
        listing = json.loads(response.read())
    return [str(server.get("nickname")) for server in listing.get("servers", [])
            if str(server.get("connection_status", "")).lower().startswith("connected")]


def _wait_until_gone(client: NodeRecord, names: list[str], seconds: float = 15.0) -> None:
    """Give a running client up to ``seconds`` to notice that the storage nodes ``names``
    (just stopped) are gone, so that "connected" afterwards means a new connection."""
    url = client.url() if client.running() else None
    if url is None or not names:
        return

    def gone() -> bool:
        return not set(names) & set(_connected_servers(url))
    try:
        wait_until(gone, "the client to notice stopped servers", time.monotonic() + seconds,
                   [])
    except (WaitTimeout, CLIError):
        pass


def _read_furl(node: NodeRecord) -> str | None:
    with open(os.path.join(node.basedir, "private", "introducer.furl")) as f:
        text = f.read().strip()
    return text if text.startswith("pb://") and "/" in text[5:] else None


def _start_nodes(grid_dir: str, settings: dict[str, Any], nodes: list[NodeRecord],
                 env: Mapping[str, str], deadline: float, hold_stdin: bool) -> str:
    """Create what is missing, start every node that is not running, wait until the grid
    works; the gateway URL."""
    introducer, others = nodes[0], nodes[1:]
    stopped = [node for node in nodes if not node.running()]
    for node in stopped:  # a node.url left by the last run would say "ready" too early
        try:
            os.unlink(os.path.join(node.basedir, "node.url"))
        except FileNotFoundError:
            pass
    needed, happy, total = settings["shares"]
    shares = (int(needed), int(happy), int(total))
    if not os.path.exists(os.path.join(introducer.basedir, "tahoe.cfg")):
        create_node_directory(introducer, shares, settings["reserved_space"], env)
    if settings.get("introducer_furl"):
        _wait_until_gone(nodes[-1], [node.name for node in stopped if node.role == "storage"])
        for node in stopped:
            spawn(node, env, hold_stdin=hold_stdin)
        write_grid_file(grid_dir, settings, nodes)
    else:
        # First start: the introducer's FURL exists only once it runs. Make the
        # other node directories meanwhile.
        spawn(introducer, env, hold_stdin=hold_stdin)
        write_grid_file(grid_dir, settings, nodes)
        for node in others:
            if not os.path.exists(os.path.join(node.basedir, "tahoe.cfg")):
                create_node_directory(node, shares, settings["reserved_space"], env)
        settings["introducer_furl"] = wait_until(
            lambda: _read_furl(introducer), "the introducer's FURL", deadline, [introducer])
        for node in others:
            write_introducer(node, settings["introducer_furl"])
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
        if len(running) == len(nodes):
            stdout.write(f"The grid in {grid_dir} is already running; its gateway is"
                         f" {settings.get('gateway')}\n")
            return 0
        ignored = [f"--{name.replace('_', '-')}" for name in ("storage_nodes", "shares",
                                                             "base_port")
                   if getattr(args, name) is not None]
        if ignored:
            stderr.write(f"Note: the grid in {grid_dir} exists already; {', '.join(ignored)}"
                         " ignored.\n")
        missing = [node.name for node in nodes if node.name not in running]
        stdout.write(f"Starting the local grid in {grid_dir}.\n" if not running else
                     f"Starting the nodes of the grid in {grid_dir} that are not running:"
                     f" {', '.join(missing)}.\n")
    except GridFileError:
        settings, nodes = new_grid(grid_dir, args, stdout)
    stdout.flush()

    deadline = started + args.timeout
    already = [node for node in nodes if node.running()]
    try:
        url = _start_nodes(grid_dir, settings, nodes, env, deadline, hold_stdin=foreground)
    except (NodeFailed, WaitTimeout, KeyboardInterrupt, _Terminated, OSError, CLIError) as e:
        _ignore_interrupts()
        stderr.write(_failure_text(e, nodes, grid_dir))
        stderr.flush()
        stop_nodes([node for node in nodes if node not in already])
        write_grid_file(grid_dir, settings, nodes)
        stderr.write("Stopped the nodes of the grid." if not already else
                     "Stopped the nodes this command started; the others still run.")
        stderr.write("\n")
        return EXIT_INTERRUPTED if isinstance(e, (KeyboardInterrupt, _Terminated)) else 1
    settings["gateway"] = url
    write_grid_file(grid_dir, settings, nodes)
    seconds = time.monotonic() - started
    if not foreground:
        _print_ready(stdout, grid_dir, settings, url, seconds, foreground)
        return 0
    # Announced inside the serving loop's handler: a Ctrl-C right after "Press Ctrl-C"
    # must stop the grid cleanly too.
    return _serve(grid_dir, settings, nodes, stdout, stderr,
                  lambda: _print_ready(stdout, grid_dir, settings, url, seconds, foreground))


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


def _adopt_restarted(grid_dir: str, nodes: list[NodeRecord]) -> None:
    """Take over, from ``grid.json``, the processes of nodes restarted by ``tahoe grid
    restart`` (which are not children of this process)."""
    try:
        _, recorded = read_grid_file(grid_dir)
    except GridFileError:
        return
    by_name = {node.name: node for node in recorded}
    for node in nodes:
        other = by_name.get(node.name)
        if (other is not None and not node.running() and other.pid is not None
                and other.pid != node.pid and other.running()):
            node.popen, node.pid, node.start_time = None, other.pid, other.start_time


def _serve(grid_dir: str, settings: dict[str, Any], nodes: list[NodeRecord], stdout: TextIO,
           stderr: TextIO, announce: Callable[[], None]) -> int:
    """Stay until SIGINT/SIGTERM, then stop every node. A node that exits meanwhile is
    reported once (with the end of its log) and the rest of the grid keeps serving; a node
    brought back with ``tahoe grid restart`` is taken over again."""
    down: set[str] = set()
    restart = f"tahoe grid restart {shlex.quote(grid_dir)}"
    try:
        announce()
        while True:
            time.sleep(SERVE_POLL)
            _adopt_restarted(grid_dir, nodes)
            for node in nodes:
                if node.running():
                    if node.name in down:
                        down.discard(node.name)
                        stdout.write(f"Node {node.name} is running again (pid {node.pid}).\n")
                        stdout.flush()
                    continue
                if node.name in down:
                    continue
                down.add(node.name)
                status = node.exit_status()
                stderr.write(f"Node {node.name} exited"
                             + (f" with status {status}" if status is not None else "")
                             + f". The end of its log ({node.log_path}):\n{node.log_tail()}\n"
                             f"The rest of the grid keeps serving. Bring it back with:"
                             f" {restart} {node.name}\n")
                stderr.flush()
    except (KeyboardInterrupt, _Terminated):
        _ignore_interrupts()
        stdout.write("Stopping the grid...\n")
        stdout.flush()
        _adopt_restarted(grid_dir, nodes)
        stop_nodes(nodes)
        write_grid_file(grid_dir, settings, nodes)
        stdout.write("Stopped.\n")
        return 0


def _restart(grid_dir: str, name: str, timeout: float, env: Mapping[str, str],
             stdout: TextIO) -> int:
    """Stop (if running) and start again one node of the grid; wait until it serves."""
    settings, nodes = read_grid_file(grid_dir)
    by_name = {node.name: node for node in nodes}
    node = by_name.get(name)
    if node is None:
        raise GridError(f"Error: the grid in {grid_dir} has no node {name!r}; its nodes are:"
                        f" {', '.join(by_name)}")
    if not settings.get("introducer_furl"):
        raise GridError(f"Error: the grid in {grid_dir} was never started; start it with:"
                        f" tahoe grid start {shlex.quote(grid_dir)}")
    if node.running():
        stop_nodes([node])
        stdout.write(f"Stopped {name}.\n")
    if node.role == "storage":
        _wait_until_gone(by_name["client"], [name])
    if node.web_port:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(node.basedir, "node.url"))
    spawn(node, env, hold_stdin=False)
    # Only this node's record changes (another command may run the rest of the grid, or
    # restart another node at the same time).
    update_node_record(grid_dir, settings, node)
    deadline = time.monotonic() + timeout
    try:
        if node.web_port:
            wait_until(node.url, f"{name}'s node.url", deadline, [node])
        client = by_name["client"]
        url = client.url() if client.running() else None
        if node.role == "storage" and url:
            wait_until(lambda: name in _connected_servers(url),
                       f"the client to connect to {name}", deadline, [node])
    except (NodeFailed, WaitTimeout) as e:
        raise GridError(_failure_text(e, nodes, grid_dir).rstrip("\n")) from None
    stdout.write(f"Started {name} (pid {node.pid}).\n")
    return 0


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
    quoted = shlex.quote(grid_dir)
    stdout.write("The grid is not running.\n" if running == 0 else
                 f"The grid is only partly running ({running} of {len(nodes)} nodes). Start"
                 f" the others with: tahoe grid start {quoted} (or one of them with:"
                 f" tahoe grid restart {quoted} NODE)\n")
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
    restart = commands.add_parser("restart", stdout=stdout,
                                  help="stop (if running) and start one node of the grid",
                                  description="Stop one node of the grid if it runs, start it"
                                  " again in the background and wait until it serves.")
    restart.add_argument("--timeout", type=float, default=START_TIMEOUT, metavar="SECONDS",
                         help="give up waiting after this long [%(default)g]")
    restart.add_argument("directory", metavar="DIR")
    restart.add_argument("node", metavar="NODE",
                         help="introducer, storage1 … storageN, or client")
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


def _stop_requested(signum: int, frame: Any) -> None:
    """The first SIGINT, SIGTERM or SIGHUP: the others are ignored from now on, before
    anything else runs, and the grid stops. A Ctrl-C may come twice: to the terminal's
    whole process group, and passed on by a parent (``misc/run_demo.py``); the second,
    landing while the first was being handled, used to cut the stop short with a
    traceback."""
    _ignore_interrupts()
    raise KeyboardInterrupt() if signum == signal.SIGINT else _Terminated()


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
        if args.action == "restart":
            return _restart(grid_dir, args.node, args.timeout, env, stdout)
        try:
            # (SIGINT too: Ctrl-C must work even when started by a shell that ignores
            # SIGINT for its background jobs, whose ignored disposition is inherited)
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(signum, _stop_requested)
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
