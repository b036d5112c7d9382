"""``make run``: a local grid in the foreground, one file put into it and got back.

Usage: ``python misc/run_demo.py [GRID_DIR] [--storage-nodes=N] [--size=BYTES]``

1. runs ``tahoe grid run GRID_DIR`` (creating the grid the first time; default
   ``./local-grid``, 10 storage nodes; starting only the missing nodes of a
   grid that partly runs) and waits for its "Press Ctrl-C" line; a grid that
   runs already (another ``make run``, or ``tahoe grid start``) is only
   reported, with its gateway, and nothing else is done;
2. writes a sample file of pseudo-random bytes (``GRID_DIR/sample.bin``),
   uploads it with ``tahoe put``, downloads it with ``tahoe get`` and compares;
3. prints the cap and the gateway URL, and keeps the grid serving until Ctrl-C
   (or SIGTERM), then lets ``tahoe grid run`` stop every node. A node that exits
   meanwhile is reported and the rest keeps serving; ``tahoe grid restart
   GRID_DIR NODE`` (in another terminal) brings it back.

Works with stdin from /dev/null. Exit status: 0 if the round trip worked (or the
grid was running already), 1 if it did not (the grid is still served until
Ctrl-C), 2 if the grid did not start.
"""
from __future__ import annotations

import argparse
import random
import signal
import subprocess
import sys
from pathlib import Path

TAHOE = [sys.executable, "-m", "tahoe.cli.main"]


def tahoe(*args: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
    """Run ``tahoe ARGS`` (this checkout's), stdin from /dev/null; capture its output."""
    return subprocess.run([*TAHOE, *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout)


def round_trip(client_dir: Path, sample: Path, copy: Path) -> str | None:
    """Put ``sample`` and get it back into ``copy``; the cap, or None (errors printed)."""
    put = tahoe("-d", str(client_dir), "put", str(sample))
    if put.returncode != 0:
        print(f"tahoe put failed (exit status {put.returncode}):\n{put.stderr}", flush=True)
        return None
    cap = put.stdout.strip()
    print(f"$ tahoe -d {client_dir} put {sample}\n{put.stderr.strip()}\n{cap}", flush=True)
    get = tahoe("-d", str(client_dir), "get", cap, str(copy))
    if get.returncode != 0:
        print(f"tahoe get failed (exit status {get.returncode}):\n{get.stderr}", flush=True)
        return None
    print(f"$ tahoe -d {client_dir} get {cap} {copy}\n{get.stderr.strip()}", flush=True)
    if copy.read_bytes() != sample.read_bytes():
        print(f"MISMATCH: {copy} differs from {sample}", flush=True)
        return None
    print(f"The downloaded copy is identical ({sample.stat().st_size} bytes).", flush=True)
    return cap


def already_running(grid_dir: Path) -> int:
    """Say, in one line, that the grid runs already and where; exit status 0."""
    try:
        url = (grid_dir / "client" / "node.url").read_text().strip()
    except OSError:
        url = "(unknown)"
    print(f"The local grid in {grid_dir} is already running (gateway {url}): use it, or stop"
          f" it first (Ctrl-C where `make run` runs, or: tahoe grid stop {grid_dir}).",
          flush=True)
    return 0


def main() -> int:
    """Run the demo; see the module docstring for the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("grid_dir", nargs="?", default="local-grid")
    parser.add_argument("--storage-nodes", type=int, default=10)
    parser.add_argument("--size", type=int, default=3 * 1024 * 1024 + 12345)
    args = parser.parse_args()
    grid_dir = Path(args.grid_dir).resolve()
    if (grid_dir / "grid.json").exists() and tahoe("grid", "status", str(grid_dir),
                                                    timeout=60).returncode == 0:
        return already_running(grid_dir)

    runner = subprocess.Popen(
        [*TAHOE, "grid", "run", str(grid_dir), f"--storage-nodes={args.storage_nodes}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, bufsize=1)
    # Ctrl-C reaches the runner (same process group) and it stops the grid; a
    # SIGTERM sent to this script is passed on to it.
    signal.signal(signal.SIGTERM, lambda *_: runner.send_signal(signal.SIGTERM))
    assert runner.stdout is not None
    try:
        ready = False
        for line in runner.stdout:
            if "is already running" in line:  # started meanwhile by someone else
                runner.wait()
                return already_running(grid_dir)
            print(line, end="", flush=True)
            if line.startswith("Press Ctrl-C"):
                ready = True
                break
        if not ready:
            runner.wait()
            print(f"The grid did not start (exit status {runner.returncode}).", flush=True)
            return 2

        grid_dir.mkdir(exist_ok=True)
        sample, copy = grid_dir / "sample.bin", grid_dir / "sample.copy"
        sample.write_bytes(random.Random(2024).randbytes(args.size))
        cap = round_trip(grid_dir / "client", sample, copy)
        url = (grid_dir / "client" / "node.url").read_text().strip()
        print(f"\nGateway: {url}", flush=True)
        if cap is not None:
            print(f"Sample file cap: {cap}\nIn a browser: {url}uri/{cap.replace(':', '%3A')}",
                  flush=True)
        print("Serving until Ctrl-C. If a node exits, the rest keeps serving; bring it back"
              f" with: tahoe grid restart {grid_dir} NODE", flush=True)
        for line in runner.stdout:  # the runner's last words, until it exits
            print(line, end="", flush=True)
        runner.wait()
        return 0 if cap is not None else 1
    except KeyboardInterrupt:
        # From a terminal the runner got the same SIGINT; tell it anyway in case the
        # signal was sent to this process alone (it ignores a second one while stopping).
        if runner.poll() is None:
            runner.send_signal(signal.SIGINT)
        for line in runner.stdout:
            print(line, end="", flush=True)
        runner.wait()
        return 0
    finally:
        if runner.poll() is None:
            runner.send_signal(signal.SIGINT)
            runner.wait()


if __name__ == "__main__":
    sys.exit(main())
