"""Typed errors. The command line turns each into one line naming the file, field or target;
`signals_raise` makes SIGINT and SIGTERM one of them, so that `finally` blocks stop the servers
(the run phase) and shut a notebook's kernel down (the render phase) alike."""

import signal
from contextlib import contextmanager


class ClaimlabError(Exception):
    """Base class: an error the user can act on, reported without a traceback."""


class ConfigError(ClaimlabError):
    """A params or claims file is malformed: names the file and the field."""

    def __init__(self, source: str, field: str, message: str):
        self.source, self.field = str(source), field
        where = f"{self.source}: {field}" if field else self.source
        super().__init__(f"{where}: {message}")


class TargetUnavailable(ClaimlabError):
    """A target cannot be used on this machine (missing binary, no network, no tarball)."""


class ServerStartError(ClaimlabError):
    """A server claimlab launched did not become ready."""


class ServerGone(ClaimlabError):
    """A server stopped answering during a measurement."""


class WorkloadError(ClaimlabError):
    """A workload failed to load or to measure."""


class DataError(ClaimlabError):
    """Stored results are missing, torn, edited or of an unknown format."""


class SettingsMismatch(ServerStartError):
    """A started server reports a setting other than the one asked for: deterministic, so a
    restart would only repeat it; never retried (unlike other start failures)."""


class Interrupted(ClaimlabError):
    """SIGINT or SIGTERM: servers are stopped and the run can be resumed. Where the command knows
    what to do next, `advice` holds its lines, which the command line prints after the error."""

    advice: tuple[str, ...] = ()


@contextmanager
def signals_raise():
    """Turn SIGTERM (and SIGINT) into an exception so `finally` blocks stop the servers."""
    def handler(signum, frame):
        raise Interrupted(f"interrupted by {signal.Signals(signum).name}")
    previous = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, handler)
    except ValueError:   # not the main thread (e.g. inside some kernels): leave signals alone
        previous = {}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
