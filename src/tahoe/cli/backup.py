"""``tahoe backup FROM ALIAS:TO``: an immutable snapshot of a local directory, sharing
what has not changed with earlier snapshots.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3, ``scripts/tahoe_backup.py``):

1. ``TO/Archives`` is made if missing (``GET …?t=json``, ``POST …?t=mkdir``);
2. every file under FROM is looked up in the backup database
   (:mod:`.backupdb`): an unchanged one (same size, mtime and ctime) reuses
   its earlier cap, after a ``t=check`` when its last check is old; others
   are uploaded (``PUT /uri``);
3. every directory, deepest first, becomes an immutable directory
   (``POST /uri?t=mkdir-immutable``) unless one with the very same children
   was made before (reused the same way);
4. the new snapshot is linked as ``TO/Archives/YYYY-MM-DD_HH:MM:SSZ`` (UTC)
   and as ``TO/Latest`` (``PUT …?t=uri``).

Output: ``Backing up N/M... 0h 0m 0s elapsed...`` after each path, then the
counts (`` N files uploaded (R reused), S files skipped, D directories created
(DR reused), DS directories skipped``), with ``-v`` what happens to each path
and how many checks were made, and `` backup done, elapsed time: H:MM:SS``.
``-q`` prints only warnings and errors. Exit status 2 when something was
skipped (symbolic links, special files, unreadable paths), 1 on an error.

Better than Tahoe, which makes one request at a time: uploads, checks and the
directories of one depth run concurrently (``TAHOE_CLI_BACKUP_WORKERS``
requests at once, 16 by default), so a tree of unchanged files costs a walk,
database look-ups and the two final links. Standard library only.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import queue
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from .aliases import escape_path, quote_output, resolve_path
from .backup_walk import (DENIED, DIRECTORY, FILE, SPECIAL, SYMLINK, UNDECODABLE, VCS_PATTERNS,
                          Target, collect_targets, exclusion, read_exclude_file)
from .backupdb import BackupDB, BackupDBError, DirectoryRecord, FileRecord, open_backupdb
from .errors import CLIError, HTTPStatusError, LocalFileError
from .gateway import Gateway, gateway_from_args
from .localio import Body, body_from_path
from .remote import ERROR_BODY_LIMIT, call, call_ok, new_parser, object_path, run_command
from .workers import TaskPool, workers_from

__all__ = ["run", "WORKERS_VARIABLE", "archive_name"]

WORKERS_VARIABLE = "TAHOE_CLI_BACKUP_WORKERS"
EXIT_SKIPPED = 2
_METADATA_FIELDS = ("st_mode", "st_ino", "st_dev", "st_uid", "st_gid", "st_rsize",
                    "st_creator", "st_type")
_WARNINGS = {DENIED: "WARNING: permission denied on {kind} {path}",
             UNDECODABLE: "WARNING: could not list {kind} {path} due to a filename encoding"
                          " error",
             SYMLINK: "WARNING: cannot backup symlink {path}",
             SPECIAL: "WARNING: cannot backup special {path}"}


def archive_name(now: float) -> str:
    """The name of a snapshot made at ``now``: ``2024-01-31_12:00:00Z`` (UTC)."""
    return time.strftime("%Y-%m-%d_%H:%M:%SZ", time.gmtime(int(now)))


def local_metadata(stat: os.stat_result) -> dict[str, Any]:
    """The metadata Tahoe stores for a backed-up child: times and the stat fields."""
    metadata: dict[str, Any] = {"ctime": stat.st_ctime, "mtime": stat.st_mtime}
    for name in _METADATA_FIELDS:
        if hasattr(stat, name):
            metadata[name] = getattr(stat, name)
    return metadata


def _elapsed(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600}h {(whole // 60) % 60}m {whole % 60}s"


class _Backup:
    """One run: the counts, the caps made so far, and the requests in flight."""

    def __init__(self, gateway: Gateway, db: BackupDB, args: argparse.Namespace,
                 stdout: TextIO, stderr: TextIO, workers: int) -> None:
        self.gateway = gateway
        self.db = db
        self.use_timestamps = not args.ignore_timestamps
        self.verbosity = 0 if args.quiet else 2 if args.verbose else 1
        self.stdout = stdout
        self.stderr = stderr
        self.pool = TaskPool(workers)
        self.answers: queue.Queue[tuple[Callable[..., None], tuple[Any, ...]]] = queue.Queue()
        self.waiting = 0
        self.started = time.monotonic()
        self.counts = dict.fromkeys(("files_created", "files_reused", "files_skipped",
                                     "directories_created", "directories_reused",
                                     "directories_skipped", "files_checked",
                                     "directories_checked"), 0)
        self.total = 0
        #: path -> ("filenode" | "dirnode", cap, metadata) of every finished child
        self.done: dict[str, tuple[str, str, dict[str, Any]]] = {}
        self.children: dict[str, list[str]] = {}

    # -- output

    def say(self, text: str) -> None:
        """A ``-v`` line."""
        if self.verbosity >= 2:
            self.stdout.write(text + "\n")

    def _progress(self) -> None:
        if self.verbosity >= 1:
            finished = sum(self.counts[k] for k in ("files_created", "files_reused",
                                                   "files_skipped", "directories_created",
                                                   "directories_reused", "directories_skipped"))
            self.stdout.write(f"Backing up {finished}/{self.total}..."
                              f" {_elapsed(time.monotonic() - self.started)} elapsed...\n")

    def skip(self, target: Target) -> None:
        """Warn about a path that is not backed up, and count it."""
        kind = "directory" if target.is_dir else "file"
        self.counts[f"{'directories' if target.is_dir else 'files'}_skipped"] += 1
        self.stderr.write(_WARNINGS[target.kind].format(kind=kind, path=quote_output(
            target.path)) + "\n")
        self.stderr.flush()
        self._progress()

    def finished(self, target: Target, cap: str, created: bool) -> None:
        """Record a backed-up path under its parent."""
        kind = "dirnode" if target.kind == DIRECTORY else "filenode"
        assert target.stat is not None
        self.done[target.path] = (kind, cap, local_metadata(target.stat))
        self.children.setdefault(os.path.dirname(target.path), []).append(target.path)
        plural = "directories" if target.kind == DIRECTORY else "files"
        self.counts[f"{plural}_{'created' if created else 'reused'}"] += 1
        self._progress()

    # -- requests on the pool; their answers are handled on this thread

    def submit(self, work: Callable[[], Any], then: Callable[..., None]) -> None:
        """Run ``work`` on the pool; ``then(result, error)`` runs later on this thread."""
        def task() -> None:
            try:
                self.answers.put((then, (work(), None)))
            except BaseException as error:  # noqa: BLE001 - handed to the main thread
                self.answers.put((then, (None, error)))
        self.waiting += 1
        self.pool.submit(task)

    def drain(self) -> None:
        """Handle answers until nothing is in flight."""
        while self.waiting:
            then, arguments = self.answers.get()
            self.waiting -= 1
            then(*arguments)

    def _check(self, cap: str) -> bool:
        status, _, body = call(self.gateway, "POST", object_path(cap) + "?t=check&output=JSON")
        if status != 200:
            return False  # cannot check: assume it is bad, as Tahoe does
        return bool(json.loads(body)["results"]["healthy"])

    def _upload(self, path: str) -> str:
        try:
            body = body_from_path(path)
        except LocalFileError:
            raise PermissionError(path) from None
        with self.gateway.request("PUT", "uri", body=body, context="Error during file PUT"
                                  ) as response:
            data = response.read(ERROR_BODY_LIMIT)
        body.close()
        if response.status not in (200, 201):
            raise HTTPStatusError("Error during file PUT", response.status, response.reason,
                                  data)
        return data.decode("utf-8").strip()

    def _mkdir(self, contents: dict[str, tuple[str, str, dict[str, Any]]]) -> str:
        children = {name: [kind, {"ro_uri": cap, "metadata": metadata}]
                    for name, (kind, cap, metadata) in contents.items()}
        return call_ok(self.gateway, "POST", "uri?t=mkdir-immutable",
                       body=json.dumps(children).encode("utf-8"),
                       context="Error during mkdir").decode("utf-8").strip()

    # -- files

    def file(self, target: Target) -> None:
        """Reuse, check or upload one file."""
        assert target.stat is not None
        record = self.db.check_file(target.path, target.stat, self.use_timestamps)
        if record.filecap is None:
            self._start_upload(target, record)
        elif record.should_check:
            self.say(f"checking {quote_output(record.filecap)}")
            self.counts["files_checked"] += 1
            self.submit(lambda: self._check(record.filecap or ""),
                        lambda healthy, error: self._file_checked(target, record, healthy,
                                                                  error))
        else:
            self.say(f"skipping {quote_output(target.path)}..")
            self.finished(target, record.filecap, created=False)

    def _file_checked(self, target: Target, record: FileRecord, healthy: bool | None,
                      error: BaseException | None) -> None:
        if error is not None:
            raise error
        if healthy:
            assert record.filecap is not None
            self.db.did_check_file_healthy(record.filecap)
            self.say(f"skipping {quote_output(target.path)}..")
            self.finished(target, record.filecap, created=False)
        else:
            self._start_upload(target, record)

    def _start_upload(self, target: Target, record: FileRecord) -> None:
        self.say(f"uploading {quote_output(target.path)}..")
        self.submit(lambda: self._upload(target.path),
                    lambda cap, error: self._uploaded(target, record, cap, error))

    def _uploaded(self, target: Target, record: FileRecord, cap: str | None,
                  error: BaseException | None) -> None:
        if isinstance(error, PermissionError):
            self.skip(Target(DENIED, target.path, False, None, target.depth))
            return
        if error is not None:
            raise error
        assert cap is not None
        self.say(f" {quote_output(target.path, quotemarks=False)} ->"
                 f" {quote_output(cap, quotemarks=False)}")
        self.db.did_upload_file(record, cap)
        self.finished(target, cap, created=True)

    # -- directories

    def directory(self, target: Target) -> None:
        """Reuse, check or make one directory (its children are done)."""
        contents = {os.path.basename(path): self.done[path]
                    for path in self.children.get(target.path, [])}
        record = self.db.check_directory({name: cap for name, (_, cap, _) in contents.items()})
        if record.dircap is not None and not record.should_check:
            self._reused(target, record.dircap)
        elif record.dircap is not None:
            self.say(f"checking {quote_output(record.dircap)}")
            self.counts["directories_checked"] += 1
            self.submit(lambda: self._check(record.dircap or ""),
                        lambda healthy, error: self._directory_checked(
                            target, record, contents, healthy, error))
        else:
            self._start_mkdir(target, record, contents)

    def _reused(self, target: Target, dircap: str) -> None:
        self.say(f" re-using old directory for {quote_output(target.path)}")
        self.finished(target, dircap, created=False)

    def _directory_checked(self, target: Target, record: DirectoryRecord, contents: Any,
                           healthy: bool | None, error: BaseException | None) -> None:
        if error is not None:
            raise error
        if healthy:
            assert record.dircap is not None
            self.db.did_check_directory_healthy(record.dircap)
            self._reused(target, record.dircap)
        else:
            self._start_mkdir(target, record, contents)

    def _start_mkdir(self, target: Target, record: DirectoryRecord, contents: Any) -> None:
        self.say(f" creating directory for {quote_output(target.path)}")

        def made(cap: str | None, error: BaseException | None) -> None:
            if error is not None:
                raise error
            assert cap is not None
            self.db.did_create_directory(record, cap)
            self.finished(target, cap, created=True)
        self.submit(lambda: self._mkdir(contents), made)

    # -- the whole tree

    def run(self, targets: list[Target]) -> str:
        """Back up ``targets`` (files first, then directories by depth); the root's cap."""
        self.total = len(targets)
        try:
            for target in targets:
                if target.kind == FILE:
                    self.file(target)
                elif target.kind != DIRECTORY:
                    self.skip(target)
            self.drain()
            directories = [t for t in targets if t.kind == DIRECTORY]
            for depth in sorted({t.depth for t in directories}, reverse=True):
                for target in directories:
                    if target.depth == depth:
                        self.directory(target)
                self.drain()
        finally:
            self.pool.wait()
            self.db.commit()
        root = directories[-1].path if directories else None
        if root is None or root not in self.done:
            raise CLIError("Error: the directory to back up could not be read")
        return self.done[root][1]

    def report(self, elapsed: datetime.timedelta) -> str:
        """The closing lines (none with ``-q``)."""
        c = self.counts
        if self.verbosity == 0:
            return ""
        lines = []
        if self.verbosity >= 1:
            lines.append(f" {c['files_created']} files uploaded ({c['files_reused']} reused),"
                         f" {c['files_skipped']} files skipped,"
                         f" {c['directories_created']} directories created"
                         f" ({c['directories_reused']} reused),"
                         f" {c['directories_skipped']} directories skipped")
        if self.verbosity >= 2:
            lines.append(f" {c['files_checked']} files checked,"
                         f" {c['directories_checked']} directories checked")
        lines.append(f" backup done, elapsed time: {str(elapsed).split('.')[0]}")
        return "\n".join(lines) + "\n"


def _ensure_archives(gateway: Gateway, archives: str) -> None:
    status, _, _ = call(gateway, "GET", archives + "?t=json")
    if status == 404:
        status, reason, body = call(gateway, "POST", archives + "?t=mkdir")
        if status != 200:
            raise HTTPStatusError("Unable to create target directory", status, reason,
                                  body[:ERROR_BODY_LIMIT])


def _put_child(gateway: Gateway, directory: str, name: str, cap: str) -> None:
    call_ok(gateway, "PUT", f"{directory}/{escape_path(name)}?t=uri",
            body=Body.from_bytes(cap.encode("utf-8")), context="Error during put_child")


def _backup(args: argparse.Namespace, stdout: TextIO, stderr: TextIO,
            env: Mapping[str, str]) -> int:
    started = datetime.datetime.now()
    patterns = list(args.exclude)
    for path in args.exclude_from_utf_8:
        patterns += read_exclude_file(os.path.abspath(path))
    if args.exclude_vcs:
        patterns += VCS_PATTERNS
    gateway = gateway_from_args(args, env)
    db_path = os.path.join(gateway.nodedir, "private", "backupdb.sqlite")
    try:
        db = open_backupdb(db_path)
    except BackupDBError as error:
        raise CLIError(f"{error}\nERROR: Unable to load backup db.") from None
    try:
        root_cap, path = resolve_path(gateway.aliases(), args.target)
        target = object_path(root_cap, path).rstrip("/")
        targets = collect_targets(os.path.abspath(args.source),
                                  exclusion(p.strip() for p in patterns))
        _ensure_archives(gateway, target + "/Archives")
        backup = _Backup(gateway, db, args, stdout, stderr,
                         workers_from(env, WORKERS_VARIABLE))
        dircap = backup.run(targets)
    finally:
        db.close()
    if db.write_error is not None:
        stderr.write(f"WARNING: the backup database {db_path} could not be written"
                     f" ({db.write_error}): the backup is whole, and the next one will check"
                     " its files again\n")
        stderr.flush()
    _put_child(gateway, target + "/Archives", archive_name(time.time()), dircap)
    _put_child(gateway, target, "Latest", dircap)
    stdout.write(backup.report(datetime.datetime.now() - started))
    stdout.flush()
    skipped = backup.counts["files_skipped"] + backup.counts["directories_skipped"]
    return EXIT_SKIPPED if skipped else 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe backup``: 0, 2 when something was skipped, 1 on an error."""
    parser = new_parser(
        stdout, "backup", "FROM ALIAS:TO",
        "Add a versioned backup of the local FROM directory to a timestamped subdirectory of"
        " the TO/Archives directory on the grid, sharing as many files and directories as"
        " possible with earlier backups. Create TO/Latest as a reference to the latest"
        " backup. Behaves somewhat like 'rsync -a --link-dest=TO/Archives/(previous) FROM"
        " TO/Archives/(new); ln -sf TO/Archives/(new) TO/Latest'.")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="be noisy about what is happening")
    parser.add_argument("--ignore-timestamps", action="store_true",
                        help="do not use backupdb timestamps to decide whether a local file"
                        " is unchanged")
    parser.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                        help="ignore files matching a glob pattern (may be repeated)")
    parser.add_argument("--exclude-from-utf-8", "--exclude-from", action="append", default=[],
                        metavar="FILE", help="ignore files matching the glob patterns listed"
                        " in FILE, one per line (UTF-8)")
    parser.add_argument("--exclude-vcs", action="store_true",
                        help="exclude files and directories used by version control systems:"
                        " CVS, RCS, SCCS, Git, SVN, Arch, Bazaar(bzr), Mercurial, Darcs")
    parser.add_argument("source", metavar="FROM")
    parser.add_argument("target", metavar="ALIAS:TO")
    return run_command(parser, argv, stderr, lambda args: _backup(args, stdout, stderr, env))
