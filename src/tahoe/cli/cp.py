"""``tahoe cp [-r] [-v] [--caps-only] FROM… TO``: copy files and directories, local ↔ grid.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.2-2.3, ``cp`` row); an
argument without an alias (or ``./…``, ``/…``, ``~…``) is a local path.  The
rules, checked in this order, with Tahoe's messages (exit status 1):

1. the target is examined, then each source (:mod:`tahoe.cli.cp_sources`);
2. a directory source needs ``-r`` (``cannot copy directories without
   --recursive``);
3. a missing target becomes a file if the only source is a file, else a
   directory; a file target must not end with ``/`` (``target is not a
   directory, but ends with a slash``), must have exactly one source
   (``copying multiple things requires target be a directory``) and that
   source must be a file (``cannot copy directory into a file``);
4. into a directory, every file source needs a name (``when copying into a
   directory, all source files must have names, but '<spec>' is unnamed``);
   named directories become subdirectories, unnamed ones (bare dircaps) have
   their contents copied (:mod:`tahoe.cli.cp_plan`);
5. success prints ``Success: file copied`` or ``Success: files copied``
   (nothing with the global ``-q``); ``-v`` reports progress on stderr.

Unlike Tahoe, everything is checked (collisions included) before the first
change, the copy itself runs concurrently (:mod:`tahoe.cli.cp_transfer`;
``TAHOE_CLI_CP_WORKERS`` sets the number of requests in flight, default 16),
the unnamed-file message names the unnamed source (Tahoe names the first
one), and a local file is never copied onto itself.
``--caps-only`` writes read caps instead of contents into local files; it
does nothing for grid targets (Tahoe would upload the cap's text).
Standard library only.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TextIO

from .aliases import quote_output
from .cp_plan import DirPlan, assign_sources
from .cp_sources import (DirSource, FileSource, Source, Target, expand_sources, find_source,
                         find_target)
from .cp_transfer import GridCopy, LocalCopy, copy_file_to_file
from .errors import CLIError, LocalFileError, UsageError
from .gateway import ArgumentParser, Gateway, gateway_from_args
from .remote import call_ok, new_parser, run_command, write_line
from .workers import TaskPool, workers_from

__all__ = ["run", "WORKERS_VARIABLE"]

#: Environment variable overriding the number of requests in flight (1 = one at a time).
WORKERS_VARIABLE = "TAHOE_CLI_CP_WORKERS"

_DESCRIPTION = """\
Copy files between a local filesystem and a Tahoe grid. Any FROM/TO arguments
that begin with an alias indicate Tahoe-side files or non-file arguments.
Directories are copied recursively with -r; new Tahoe-side directories are
created when necessary. For example, with an alias 'home':

  tahoe cp ~/foo.txt home:                    # creates tahoe-side home:foo.txt
  tahoe cp ~/foo.txt /tmp/bar.txt home:       # copies two files to home:
  tahoe cp -r ~/Pictures home:stuff/my-pictures  # copies a directory

A dircap may be used as FROM or TO. Source directories with names are copied
as a whole (as a subdirectory of the target); source directories without
names (a raw dircap) have their contents copied.
"""


def _check_rules(sources: list[Source], target: Target, specs: list[str], destination: str,
                 recursive: bool) -> bool:
    """Apply rules 2-4; return whether the target is a file.

    :raises CLIError: with Tahoe's message when a rule is broken.
    """
    if any(isinstance(source, DirSource) for source in sources) and not recursive:
        raise CLIError("cannot copy directories without --recursive")
    if target.kind == "missing":
        target_is_file = len(sources) == 1 and isinstance(sources[0], FileSource)
    else:
        target_is_file = target.kind == "file"
    if target_is_file and destination.endswith("/"):
        raise CLIError("target is not a directory, but ends with a slash")
    if target_is_file and len(sources) > 1:
        raise CLIError("copying multiple things requires target be a directory")
    if target_is_file:
        if not isinstance(sources[0], FileSource):
            raise CLIError("cannot copy directory into a file")
        return True
    for spec, source in zip(specs, sources):
        if isinstance(source, FileSource) and source.name is None:
            raise CLIError("when copying into a directory, all source files must have names,"
                           f" but {quote_output(spec)} is unnamed")
    return False


def _root_plan(gateway: Gateway, target: Target) -> DirPlan:
    """The plan of the target directory, made first if it is missing (as Tahoe does)."""
    if target.local_path is not None:
        if target.kind == "missing":
            try:
                os.makedirs(target.local_path)
            except OSError as e:
                raise LocalFileError(f"Error: cannot make {quote_output(target.local_path)}:"
                                     f" {e.strerror or e}") from None
        return DirPlan("", local_path=target.local_path)
    assert target.relative is not None
    if target.kind == "missing":
        writecap = call_ok(gateway, "POST", target.relative + "?t=mkdir",
                           context="Error during mkdir").decode("utf-8", "replace").strip()
        return DirPlan("", writecap=writecap, children={})
    return DirPlan("", writecap=target.writecap, children=target.children or {})


def _cp(args: argparse.Namespace, parser: ArgumentParser, stdout: TextIO, stderr: TextIO,
        env: Mapping[str, str]) -> int:
    if len(args.paths) < 2:
        raise UsageError(f"Usage: {parser.format_usage().strip().removeprefix('usage: ')}\n"
                         "cp requires at least two arguments")
    specs, destination = args.paths[:-1], args.paths[-1]
    verbose = args.verbose and not args.quiet

    def progress(message: str) -> None:
        if verbose:
            stderr.write(message + "\n")
            stderr.flush()

    def warn(message: str) -> None:
        if not args.quiet:
            stderr.write(message + "\n")
            stderr.flush()

    gateway = gateway_from_args(args, env, parser)
    workers = workers_from(env, WORKERS_VARIABLE)
    target = find_target(gateway, destination, env)
    sources = [find_source(gateway, spec, env) for spec in specs]
    if _check_rules(sources, target, specs, destination, args.recursive):
        copy_file_to_file(gateway, sources[0], target, args.caps_only)
        message = "file copied"
    else:
        expand_sources(gateway, sources, workers, progress, warn)
        files = sum(isinstance(source, FileSource) for source in sources)
        progress(f"attaching sources to targets, {files} files /"
                 f" {len(sources) - files} dirs in root")
        pool = TaskPool(workers)
        copier = (LocalCopy if target.local_path is not None else GridCopy)(
            gateway, pool, progress, args.caps_only)
        if target.kind == "missing":  # check the plan against an empty target first
            trial = DirPlan("", existing=False, local_path=target.local_path)
            assign_sources(trial, sources, lambda parent, name: DirPlan(name, parent, False))
        root = _root_plan(gateway, target)
        assign_sources(root, sources, copier.open_subdirectory)
        copier.run(root)
        message = "files copied"
    if not args.quiet:
        write_line(stdout, f"Success: {message}")
    return 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe cp``: 0 on success, 1 on any error."""
    parser = new_parser(stdout, "cp", "FROM.. TO", _DESCRIPTION)
    parser.add_argument("-r", "--recursive", action="store_true",
                        help="copy source directories recursively")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="be noisy about what is happening")
    parser.add_argument("--caps-only", action="store_true",
                        help="when copying to local files, write out filecaps instead of"
                        " actual data (only useful for debugging and tree-comparison purposes)")
    parser.add_argument("paths", nargs="*", metavar="FROM.. TO")
    return run_command(parser, argv, stderr,
                       lambda args: _cp(args, parser, stdout, stderr, env))
