"""Servers left by a killed claimlab are stopped by the next claimlab start that may start
servers (not only by the next `run`); two runs never share one external server."""

import pytest

from claimlab.errors import TargetUnavailable
from claimlab.servers import Launcher, ServerOptions, TargetSpec, reaper
from conftest import pid_alive, run_cli


def test_any_command_that_starts_servers_first_reaps_orphans(tmp_path, default_target):
    run_dir = tmp_path / "work" / "20260101-000000-dead"
    run_dir.mkdir(parents=True)
    (run_dir / ".lock").touch()            # nobody holds it: the run that made it is dead
    reaper.mark(run_dir, run_dir.name)     # and claimlab made it
    orphan = Launcher(run_dir).prepare(default_target, ServerOptions()).start()
    # as if claimlab had died between the server's start and its pid file (a killed Dask worker):
    # before, such a server ran on, and its directory was removed from under it
    orphan.pid_file.unlink()
    try:
        result = run_cli("diff", "no_such_target", "no_such_target", "--work", str(tmp_path / "work"))
        assert result.returncode == 1 and "declares a target named 'no_such_target'" in result.stderr
        assert f"stopped 1 server(s) left by a killed claimlab: pids {orphan.pid}" in result.stderr
        assert not pid_alive(orphan.pid) and not run_dir.exists()
    finally:
        orphan.stop()


def test_two_runs_cannot_share_an_external_server(server, monkeypatch):
    monkeypatch.setenv("CLAIMLAB_TEST_PW", server.password)
    external = TargetSpec(name="theirs", kind="external", socket=server.connect_args()["unix_socket"],
                          user="root", password_env="CLAIMLAB_TEST_PW")
    first, second = Launcher(server.home / "a"), Launcher(server.home / "b")
    first.prepare(external, ServerOptions())
    with pytest.raises(TargetUnavailable, match="another claimlab run is using this server"):
        second.prepare(external, ServerOptions())
    first.close()
    second.prepare(external, ServerOptions()).start()
    second.close()
