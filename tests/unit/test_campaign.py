"""The run phase's plan and hand-over, without servers: what `claimlab report` will run, what it
renders with --from-data, the time left it prints, and the command an interrupt prints."""

from __future__ import annotations

import dataclasses
import re

import pytest

from claimlab import campaign, report
from claimlab.errors import ClaimlabError, DataError, Interrupted
from conftest import copy_run, frozen, frozen_id


def test_from_data_alone_renders_the_published_runs_and_named_runs_go_by_experiment(frozen_checkout, monkeypatch):
    monkeypatch.setenv("CLAIMLAB_ROOT", str(frozen_checkout))
    published = report.published_runs()
    stored = campaign.stored(None)
    assert stored.claims == published
    assert list(stored.investigations.values()) == [frozen_id("why_slower")]   # its newest stored run
    only_c4 = campaign.stored(None, experiments=["binlog_default"]).claims
    assert only_c4 == {"binlog_default": published["binlog_default"]}
    c4, c1 = published["binlog_default"], published["charset_mismatch"]
    earlier = report.published_runs(file=report.EARLIER_RUNS)["charset_mismatch"]
    assert campaign.stored([*c4, *earlier, *c1]).claims == {"binlog_default": c4, "charset_mismatch": [*earlier, *c1]}
    # named runs with --only: those it names render; another's run is refused, not silently rendered
    assert campaign.stored(c4, experiments=["binlog_default"]).claims == {"binlog_default": c4}
    with pytest.raises(ClaimlabError, match=f"{c1[0]} is a run of 'charset_mismatch', which --only leaves out"):
        campaign.stored([*c4, c1[0]], experiments=["binlog_default"])


def test_a_run_named_by_its_folder_is_rendered_by_id_from_where_the_render_looks(tmp_path):
    # Before: the folder reached the notebook as a run id, which stopped at cell 3 ("is not a run id").
    run = copy_run(frozen("c1"), tmp_path)
    assert campaign.stored([str(run)], data_dir=tmp_path).claims == {"charset_mismatch": [run.name]}
    with pytest.raises(ClaimlabError, match=rf"--from-data {run}: .* lies outside runs/ and data/raw: "
                                            rf"add --data {tmp_path}$"):
        campaign.stored([str(run)])     # the same id is found, but the shipped copy, not this one


def test_an_unknown_experiment_is_refused_before_anything_runs():
    with pytest.raises(ClaimlabError, match="--only: no claim report for 'nope'"):
        campaign.plan(["nope"], "quick", ["mariadb"], log=lambda msg: None)
    with pytest.raises(ClaimlabError, match="--only: no claim report for 'nope'"):   # was a ValueError
        campaign.stored(None, experiments=["nope"])


def test_a_run_edited_after_it_ended_is_refused_before_any_notebook_starts(tmp_path):
    # Before: the claim notebook's traceback, ending in advice (--accept-modified) report does not take.
    run = copy_run(frozen("c1"), tmp_path)
    (run / "events.jsonl").write_text((run / "events.jsonl").read_text() + "\n")
    with pytest.raises(DataError, match=f"--from-data: {run}: modified after the run: events.jsonl; the "
                                        "reports render verified runs only"):
        campaign.stored([run.name], data_dir=tmp_path)


def test_the_time_left_is_the_mean_run_so_far_times_the_runs_left():
    assert campaign._eta([], 5) == ""
    assert campaign._eta([60.0, 120.0], 2) == "; about 3 min left"
    assert campaign._eta([20.0], 2) == "; about 40 s left"


def test_an_interrupt_names_the_command_that_finishes_the_cut_run_and_renders_every_run(tmp_path):
    (step,) = [s for s in campaign.plan(["binlog_default"], "quick", ["mariadb"], log=lambda msg: None)]
    done = campaign.Runs(claims={"charset_mismatch": ["A"], "binlog_default": []})
    out = campaign._interrupted(Interrupted("interrupted by SIGINT"), step, "B", done, tmp_path)
    assert isinstance(out, Interrupted) and not getattr(out, "run_id", None)
    assert out.advice == (f"B keeps what was measured; resume with: claimlab run binlog_default --profile quick "
                          f"--target mariadb --data {tmp_path} --resume B && claimlab report --from-data A B "
                          f"--data {tmp_path}",)


def test_an_interrupt_before_anything_was_stored_says_what_stands(tmp_path, monkeypatch):
    # Before: "what was measured is kept; `claimlab runs` lists the interrupted runs" where no run
    # had started, and nothing named the runs an interrupt between two runs left complete.
    (step,) = [s for s in campaign.plan(["binlog_default"], "quick", ["mariadb"], log=lambda msg: None)]
    signal = Interrupted("interrupted by SIGINT")
    done = campaign.Runs(claims={"charset_mismatch": ["A"], "binlog_default": []})
    out = campaign._interrupted(signal, step, None, done, tmp_path)
    assert out.advice == (
        f"binlog_default on mariadb had not started measuring; the runs before it are complete: render them "
        f"with: claimlab report --from-data A --data {tmp_path}",)
    out = campaign._interrupted(signal, step, None, campaign.Runs(claims={"binlog_default": []}), None)
    assert out.advice == ("binlog_default on mariadb had not started measuring; nothing was measured before it",)
    ablation = dataclasses.replace(step, investigation="why_slower")
    out = campaign._interrupted(signal, ablation, "B", done, None)     # an ablation is not resumed
    assert out.advice[0].startswith("the why_slower investigation was cut")

    def loading(*args, **kwargs):
        raise Interrupted("interrupted by SIGTERM")
    monkeypatch.setattr(campaign, "preload_all", loading)
    with pytest.raises(Interrupted, match="SIGTERM") as raised:
        campaign.measure(["binlog_default"], targets=["mariadb"], data_dir=tmp_path, log=lambda msg: None)
    assert raised.value.advice[0].startswith("no run had started: nothing was measured")


def test_a_malformed_published_list_is_one_line_naming_it(tmp_path):
    # Before: a JSONDecodeError or AttributeError traceback, from `claimlab runs` too.
    (tmp_path / "data").mkdir()
    listed = tmp_path / "data" / report.PUBLISHED_RUNS
    for text, message in [('{"x":', "unreadable"), ("[1, 2]", "expected {experiment: [run id, ...]}"),
                          ('{"x": [1]}', "expected {experiment: [run id, ...]}")]:
        listed.write_text(text)
        with pytest.raises(DataError, match=re.escape(f"{listed}: {message}")):
            report.published_runs(tmp_path)
    listed.write_text('{"x": "one", "y": ["two", "three"]}')
    assert report.published_runs(tmp_path) == {"x": ["one"], "y": ["two", "three"]}


def test_runs_of_a_renamed_params_file_are_said_to_be_tested_by_no_comparison():
    # Before: every comparison of such a run read "not tested", and nothing said why.
    import pandas as pd

    from claimlab.claims import load_claims
    from conftest import ROOT
    claim = load_claims(ROOT / "data" / "claims.yaml")["C2"]
    results = pd.DataFrame({"experiment": ["mine_collation_cost", "collation_cost"]})
    assert report._untested_experiments(results, claim) == (
        "the runs of experiment 'mine_collation_cost' are tested by none of C2's comparisons, which name "
        "'collation_cost' (data/claims.yaml); name the params file as they do",)
    assert report._untested_experiments(results.iloc[1:], claim) == ()


def test_a_rows_rerun_target_is_that_of_the_runs_that_measured_it():
    # C3's report analyses its MariaDB and MySQL runs together: "mariadb mysql" for every row made
    # the rerun command fall back to a target no params file declares ("mysql80+mysql80fork")
    import pandas as pd
    in_run = pd.Series({"a": {"mariadb"}, "b": {"mysql", "mysql57", "mysql80", "mysql80fork"}})
    made_with = {"a": "mariadb", "b": "mysql"}
    assert report._run_target("mysql80+mysql80fork", in_run, made_with) == "mysql"
    assert report._run_target("mariadb+mysql+mysql57", in_run, made_with) == "mysql"
    assert report._run_target("mariadb", in_run, made_with) == "mariadb"
    assert report._run_target("elsewhere", in_run, made_with) == ""
