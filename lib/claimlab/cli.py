"""The `claimlab` command line: the parser, built from the command modules (claimlab.commands),
and the one place where every ClaimlabError becomes one line and a non-zero exit."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from .commands import (
    EXIT_BROKEN_PIPE,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    ablate,
    analyze,
    diff,
    import_run,
    prepare,
    profile,
    publish,
    report,
    run,
    runs,
    setup_mysql,
    targets,
    validate,
)
from .errors import ClaimlabError, Interrupted

# In the order `claimlab --help` lists them.
COMMANDS = {m.NAME: m for m in (run, prepare, validate, targets, setup_mysql, runs, analyze, report, import_run,
                                diff, ablate, publish, profile)}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="claimlab",
        description="Re-test published MySQL performance claims on real servers, with repeated "
                    "runs and honest statistics.",
        epilog="Start with `claimlab targets`, then `claimlab run binlog_default --profile smoke`.")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(sub)
    return p


def _reap_orphans(args) -> None:
    """A command that may start servers first stops the servers a killed claimlab left behind
    (`run` and `prepare` do so themselves, under the lock that claims their work directory)."""
    from .servers import reap
    from .store import project_root
    reaped = reap(getattr(args, "work", None) or project_root() / "work")
    if reaped:
        print(f"claimlab: stopped {len(reaped)} server(s) left by a killed claimlab: pids "
              f"{', '.join(map(str, reaped))}", file=sys.stderr)


def _check_writable(args, command) -> None:
    """Every directory a command will write to, checked before anything starts and without
    making it: a mistyped or read-only path is one line now, not a traceback after minutes of
    measuring. What is checked is the nearest part of the path that exists, by making and
    removing a directory there (permission bits do not tell for root or special file systems)."""
    writes_data = getattr(command, "writes_data", lambda args: False)(args)
    names = ("work", "out", "figures") + (("data",) if writes_data else ())
    dirs = [(f"--{name}", getattr(args, name)) for name in names if getattr(args, name, None) is not None]
    if getattr(args, "table", None) is not None:
        if args.table.is_dir():
            raise ClaimlabError(f"--table {args.table}: is a directory; name the CSV file to write")
        dirs.append(("--table", args.table.parent))
    if getattr(args, "work", None) is not None:
        from .runner import check_scratch
        from .store import runs_root
        check_scratch(args.work.absolute(), getattr(args, "data", None) or runs_root())
    for option, path in dirs:
        existing = path
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir():
            raise ClaimlabError(f"{option} {path}: {existing} is not a directory")
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".claimlab-check-", dir=existing))
        except OSError as exc:
            raise ClaimlabError(f"{option} {path}: cannot write in {existing} ({exc.strerror})") from None


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    command = COMMANDS[args.command]
    try:
        _check_writable(args, command)
        if getattr(command, "STARTS_SERVERS", False):
            _reap_orphans(args)
            from .errors import signals_raise
            with signals_raise():    # SIGTERM, like Ctrl-C, unwinds: the servers are stopped
                return command.main(args)
        return command.main(args)
    except KeyboardInterrupt:   # Ctrl-C outside signals_raise: a run's set-up, or a command that starts none
        resume = "; resume with --resume RUN_ID (see `claimlab runs`)" if args.command == "run" else ""
        print(f"claimlab: interrupted{resume}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader stopped reading (`claimlab analyze ... | head`): no traceback, and none at exit
        # when Python flushes stdout (the Python docs' "Note on SIGPIPE")
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except ClaimlabError as exc:
        if args.debug:
            raise
        message = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        print(f"claimlab: error: {message}", file=sys.stderr)
        if isinstance(exc, Interrupted):
            _say_how_to_resume(exc)
            return EXIT_INTERRUPTED
        return EXIT_ERROR


def _say_how_to_resume(exc: Interrupted) -> None:
    """What the command said stands and what to type next (`advice`); otherwise all that is sure:
    the servers were stopped on the way out."""
    for line in exc.advice or ("every server it started is stopped",):
        print(f"claimlab: {line}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
