"""CPU evidence of a run on Oracle MySQL 9.7 (Debian's package): profiled on the run's own
target, its functions named through MySQL's handler tables, instructions counted under callgrind,
stored checksummed with the run. Skipped (one line) where MySQL cannot be set up."""

import json
import re

import pytest

from claimlab import evidence, params, profiling, runner
from claimlab.errors import DataError
from claimlab.servers import installation
from claimlab.store import sha256_file
from conftest import evidence_servers, pid_alive

C2_TINY = """
claim: C2
targets:
  mariadb: {kind: mariadb, options: {innodb_buffer_pool_size: 64M}}
  mysql: {kind: mysql-debian, options: {innodb_buffer_pool_size: 64M}}
workloads:
  varchar_scan: {kind: varchar_scan, rows: 5000}
factors:
  collation:
    utf8mb3_general_ci: {workloads: {varchar_scan: {charset: utf8mb3, collation: utf8mb3_general_ci}}}
    uca_ai: {workloads: {varchar_scan: {charset: utf8mb4, collation: uca_ai}}}
design: {repetitions: 1, warmup: 0, iterations: 1}
"""


def test_conditions_are_those_of_the_named_target(write_params, mysql_target):
    path = write_params(C2_TINY, "c2")
    conds = {c.name: c for c in profiling.conditions_of(str(path), target="mysql")}
    assert {c.target.kind for c in conds.values()} == {"mysql-debian"}
    assert conds["collation_uca_ai"].workload.collation == "utf8mb4_0900_ai_ci"   # the role, spelled
    assert {c.target.kind for c in profiling.conditions_of(str(path))} == {"mariadb"}   # the first target


def test_evidence_of_a_mysql_run_is_collected_on_mysql_and_stored_checksummed(tmp_path, write_params,
                                                                             mysql_target):
    path = write_params(C2_TINY, "c2")
    exp = params.with_default_target(params.load(path, "smoke"), "mysql", "--target")
    run = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    ev = evidence.collect(str(path), run.path, levels=("uca_ai",), seconds=1.0)   # target: the run's

    stored = run.path / evidence.DIRECTORY
    meta = json.loads((stored / evidence.INDEX).read_text())
    binary = str(installation(mysql_target).binary)
    assert meta["targets"] == ["mysql"] and list(meta["binaries"]) == [binary]
    assert re.fullmatch(r"[0-9a-f]{40}", meta["binaries"][binary])          # the package's GNU build id
    assert set(meta["checksums"]) == {"collation_uca_ai.folded", "instructions.csv", evidence.FUNCTIONS}
    assert all(sha256_file(stored / f) == digest for f, digest in meta["checksums"].items())

    (prof,) = ev.profiles
    assert prof.named_share > 0.9, prof.unnamed()
    assert prof.share_of(evidence.EVIDENCE_PATTERNS["collation_cost"]) > 0.1
    assert any("my_charset_utf8mb4_0900_ai_ci" in f for f in prof.top_functions(5)["function"])
    (counted,) = ev.instructions.itertuples()
    assert counted.condition == "collation_uca_ai" and counted.per_row > 1000   # a UCA 9.0 comparison per row
    assert set(ev.functions["condition"]) == {"collation_uca_ai"} and (ev.functions["self"] > 0).any()
    assert not any(pid_alive(int(p.read_text())) for p in tmp_path.rglob("server.pid"))
    assert not evidence_servers(binary)

    with pytest.raises(DataError, match="not overwritten"):
        evidence.collect(str(path), run.path)
    folded = stored / "collation_uca_ai.folded"
    folded.write_text(folded.read_text() + "mysqld;edited 1\n")
    with pytest.raises(DataError, match="collation_uca_ai.folded changed after profiling"):
        evidence.load(run.path)
