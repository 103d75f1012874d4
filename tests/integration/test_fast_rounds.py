"""`design.fast_rounds` on a real server: a start short of fast-state values gets whole rounds
more, never past the cap; the run records what was added; a metric the workload lacks is a
one-line WorkloadError that keeps what was measured. `design.timed_rounds` likewise for a start
that measured less than its seconds."""

import pandas as pd
import pytest

from claimlab import params, runner
from claimlab.errors import WorkloadError
from claimlab.store import read_jsonl, read_manifest, read_results
from conftest import C2_TWO_COLLATIONS

EXP = C2_TWO_COLLATIONS + """design:
  repetitions: 2
  warmup: 0
  iterations: 2
  starts_per_block: 2
  fast_rounds: {{metric: {metric}, count: 3, max_iterations: 4}}
"""


def test_a_start_short_of_fast_values_gets_whole_rounds_up_to_the_cap(tmp_path, write_params, mariadbd):
    # two rounds cannot hold three fast values: every start needs one round more at least
    exp = params.load(write_params(EXP.format(kind="mariadb", metric="elapsed_s"), name="collation_cost"))
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert outcome.status == "complete"
    elapsed = read_results(outcome.path).query("metric == 'elapsed_s'")
    rounds = elapsed.groupby(["repetition", "condition"])["iteration"].agg(["nunique", "max"])
    assert len(rounds) == 4 and rounds["nunique"].between(3, 4).all(), rounds
    assert (rounds["max"] + 1 == rounds["nunique"]).all(), "rounds are numbered on, none skipped"
    # whole rounds: the two starts of the block and both collations measured in every one
    per_round = elapsed.groupby("iteration")[["repetition", "condition"]].nunique()
    assert (per_round == [2, 2]).all().all(), per_round
    assert outcome.measurements == len(elapsed)
    added = [e for e in read_jsonl(outcome.path / "events.jsonl") if e["event"] == "fast_rounds"]
    assert [e["added"] for e in added] == [rounds["nunique"].max() - 2]
    if added[0]["added"] == 1:   # stopped before the cap: every start then had its three
        assert added[0]["still_short"] is False
    design = read_manifest(outcome.path)["design"]
    assert design["fast_rounds"] == {"metric": "elapsed_s", "fastest": "min", "count": 3, "max_iterations": 4}


def test_a_metric_the_workload_lacks_is_a_one_line_error_and_the_rows_stay(tmp_path, write_params, mariadbd):
    exp = params.load(write_params(EXP.format(kind="mariadb", metric="qps"), name="collation_cost"))
    with pytest.raises(WorkloadError, match=r"varchar_scan: design.fast_rounds.metric 'qps' is not among its "
                                            r"metrics \(elapsed_s"):
        runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    [run_dir] = (tmp_path / "raw" / "collation_cost").iterdir()
    assert read_manifest(run_dir)["status"] == "failed"
    kept = read_results(run_dir)
    assert isinstance(kept, pd.DataFrame) and len(kept.query("metric == 'elapsed_s'")) == 1


# scans of milliseconds: a start's time then clearly exceeds the cost around its measurements
TIMED = C2_TWO_COLLATIONS.replace("rows: 500", "rows: 50000") + """design:
  repetitions: 2
  warmup: 0
  iterations: 2
  starts_per_block: 2
  timed_rounds: {{seconds: {seconds:f}, max_iterations: 5}}
"""


@pytest.mark.parametrize("seconds, rounds", [(1000, 5), (1e-6, 2)], ids=["never reached", "reached at once"])
def test_a_start_that_measured_less_than_its_seconds_gets_whole_rounds_up_to_the_cap(
        tmp_path, write_params, mariadbd, seconds, rounds):
    exp = params.load(write_params(TIMED.format(kind="mariadb", seconds=seconds), name="collation_cost"))
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert outcome.status == "complete"
    elapsed = read_results(outcome.path).query("metric == 'elapsed_s'")
    per_round = elapsed.groupby("iteration")[["repetition", "condition"]].nunique()
    assert list(per_round.index) == list(range(rounds)) and (per_round == [2, 2]).all().all(), per_round
    added = [e for e in read_jsonl(outcome.path / "events.jsonl") if e["event"] == "timed_rounds"]
    if rounds == 2:
        assert added == []
    else:
        [event] = added
        assert event["added"] == 3
        # a start's time (the mean over the block's starts), the stamps around its work: at least
        # its scans' (the event rounds to milliseconds), and not both starts' together
        per_start = elapsed.groupby("repetition")["value"].sum()
        assert per_start.mean() - 0.001 <= event["measured_s"] < per_start.sum(), (event, per_start)
    assert read_manifest(outcome.path)["design"]["timed_rounds"] == {"seconds": seconds, "max_iterations": 5}
