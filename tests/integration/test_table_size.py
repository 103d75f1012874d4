"""bench/table_size.py on a real MariaDB: C2's collations at two table sizes in one server start,
alternated, each size analysed as C2's own analysis reads a run; stored runs read again alike."""

import re

from claimlab.store import read_manifest, read_results
from conftest import bench_module


def test_two_sizes_share_every_start_and_are_analysed_apart(tmp_path, capsys, mariadbd):
    bench = bench_module("table_size")
    assert bench.main(["--target", "mariadb", "--runs", "1", "--rows", "1000", "3000", "--starts", "2",
                       "--rounds", "2", "--data", str(tmp_path / "raw"), "--work", str(tmp_path / "work")]) == 0
    out = capsys.readouterr().out
    [run_dir] = (tmp_path / "raw" / "table_size").iterdir()
    assert read_manifest(run_dir)["status"] == "complete"
    scans = read_results(run_dir).query("metric == 'elapsed_s'")
    # every start scanned all eight tables in each round: both sizes met the same machine states
    per_round = scans.groupby(["repetition", "iteration"])["condition"].nunique()
    assert len(per_round) == 4 and (per_round == 8).all(), per_round
    assert set(scans["size"]) == {"r1000", "r3000"}
    heads = re.findall(rf"^{run_dir.name} mariadb ([\d,]+) rows: measured (\d+\.\d) s$", out, re.M)
    assert [rows for rows, _ in heads] == ["1,000", "3,000"], out
    for size, (_, measured) in zip(("r1000", "r3000"), heads):
        assert float(measured) == round(scans.loc[scans["size"] == size, "value"].sum(), 1)
    # at a thousand rows a comparison may count too few starts for an estimate ("—"), never fewer lines
    comparisons = re.findall(r"^   (\S+) +(\d\.\d{4}|—) ±(\d+\.\d%|—)  starts (\d+)  ", out, re.M)
    assert sorted({name for name, *_ in comparisons}) == ["uca_ai_vs_utf8mb3", "unicode_vs_general",
                                                         "utf8mb4_general_vs_utf8mb3"]
    assert len(comparisons) == 6 and all(int(starts) <= 2 for *_, starts in comparisons), out
    # read again from the store, the same lines
    assert bench.main(["--run", run_dir.name, "--data", str(tmp_path / "raw")]) == 0
    assert capsys.readouterr().out == out
