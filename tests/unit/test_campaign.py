"""The run phase's plan and hand-over, without servers: what `claimlab report` will run, what it
renders with --from-data, the time left it prints, and the command an interrupt prints."""

from __future__ import annotations

import pytest

from claimlab import campaign, report
from claimlab.errors import ClaimlabError, Interrupted
from conftest import ROOT


def test_from_data_alone_renders_the_published_runs_and_named_runs_go_by_experiment():
    published = report.published_runs(ROOT)
    assert campaign.stored(None).claims == published
    only_c4 = campaign.stored(None, experiments=["binlog_default"]).claims
    assert only_c4 == {"binlog_default": published["binlog_default"]}
    c4, c2 = published["binlog_default"], published["collation_cost"]
    assert campaign.stored([*c4, c2[0]]).claims == {"binlog_default": c4, "collation_cost": c2[:1]}


def test_an_unknown_experiment_is_refused_before_anything_runs():
    with pytest.raises(ClaimlabError, match="--only: no claim report for 'nope'"):
        campaign.plan(["nope"], "quick", ["mariadb"], log=lambda msg: None)


def test_the_time_left_is_the_mean_run_so_far_times_the_runs_left():
    assert campaign._eta([], 5) == ""
    assert campaign._eta([60.0, 120.0], 2) == "; about 3 min left"
    assert campaign._eta([20.0], 2) == "; about 40 s left"


def test_an_interrupt_names_the_command_that_finishes_the_cut_run_and_renders_every_run(tmp_path):
    (step,) = [s for s in campaign.plan(["binlog_default"], "quick", ["mariadb"], log=lambda msg: None)]
    done = campaign.Runs(claims={"charset_mismatch": ["A"], "binlog_default": []})
    out = campaign._interrupted(Interrupted("interrupted by SIGINT"), step, "B", done, tmp_path)
    assert isinstance(out, Interrupted) and not getattr(out, "run_id", None)
    assert out.resume == [("B", f"claimlab run binlog_default --profile quick --target mariadb --data {tmp_path} "
                                f"--resume B && claimlab report --from-data A B --data {tmp_path}")]
