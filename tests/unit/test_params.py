"""Params files: every shipped file loads, and malformed ones fail naming the file and field."""

import pytest

from claimlab import params
from claimlab.design import conditions
from claimlab.errors import ConfigError
from conftest import ROOT

MINIMAL = """
claim: C4
targets:
  default: {kind: mariadb}
workloads:
  ins: {kind: proc_insert_loop, rows: 10}
factors:
  binlog:
    "off": {server: {log_bin: false}}
    "on": {server: {log_bin: true}}
design: {repetitions: 2, iterations: 1, warmup: 0}
"""


@pytest.mark.parametrize("path", sorted((ROOT / "params").glob("*.yaml")), ids=lambda p: p.stem)
@pytest.mark.parametrize("profile", params.PROFILES)
def test_shipped_params_load(path, profile):
    exp = params.load(path, profile)
    assert exp.name == path.stem and exp.profile == profile
    assert conditions(exp)


def test_minimal_loads_and_builds_conditions(write_params):
    exp = params.load(write_params(MINIMAL), "quick")
    ids = [c.id for c in conditions(exp)]
    assert ids == ["binlog=off", "binlog=on"]
    on = [c for c in conditions(exp) if c.id == "binlog=on"][0]
    assert on.server.log_bin is True and on.target == "default"


def test_profile_overrides_design_workloads_and_levels(write_params):
    exp = params.load(write_params(MINIMAL + """
profiles:
  smoke:
    design: {repetitions: 3}
    workloads: {ins: {rows: 5}}
    levels: {binlog: ["on"]}
"""), "smoke")
    assert exp.design.repetitions == 3 and exp.design.iterations == 1
    assert [c.id for c in conditions(exp)] == ["binlog=on"]
    assert conditions(exp)[0].workloads[0].rows == 5


BAD = {
    "unknown top key": (MINIMAL + "colour: red\n", "colour"),
    "unknown design key": (MINIMAL.replace("warmup: 0", "warmup: 0, repetitons: 3"), "design.repetitons"),
    "zero repetitions": (MINIMAL.replace("repetitions: 2", "repetitions: 0"), "design.repetitions"),
    "negative iterations": (MINIMAL.replace("iterations: 1", "iterations: -1"), "design.iterations"),
    "string repetitions": (MINIMAL.replace("repetitions: 2", "repetitions: two"), "design.repetitions"),
    "bool repetitions": (MINIMAL.replace("repetitions: 2", "repetitions: yes"), "design.repetitions"),
    "unknown workload kind": (MINIMAL.replace("proc_insert_loop", "tpcc"), "workloads.ins.kind"),
    "unknown workload param": (MINIMAL.replace("rows: 10", "rows: 10, rowz: 3"), "workloads.ins.rowz"),
    "zero rows": (MINIMAL.replace("rows: 10", "rows: 0"), "workloads.ins.rows"),
    "unknown server option": (MINIMAL.replace("log_bin: false", "log_bn: false"), "factors.binlog.off.server.log_bn"),
    "bad charset name": (MINIMAL.replace("log_bin: false", "character_set_server: \"latin1; DROP\""),
                         "factors.binlog.off.server.character_set_server"),
    "unknown target kind": (MINIMAL.replace("kind: mariadb", "kind: oracle"), "targets.default.kind"),
    "level with unknown target": (MINIMAL.replace('"on": {server: {log_bin: true}}', '"on": {target: nope}'),
                                  "factors.binlog.on.target"),
    "missing claim": (MINIMAL.replace("claim: C4\n", ""), "claim"),
    "unknown profile": (MINIMAL + "profiles: {huge: {}}\n", "profiles.huge"),
    "factor named like a column": (MINIMAL.replace("binlog:", "metric:"), "factors.metric"),
    "level name with SQL": (MINIMAL.replace('"on":', '"on\'; DROP TABLE t; --":'), "factors.binlog"),
    "password in file": (MINIMAL.replace("default: {kind: mariadb}",
                                         "default: {kind: external, host: 127.0.0.1, password: hunter2}"),
                         "targets.default.password"),
    "remote without allow_remote": (MINIMAL.replace("default: {kind: mariadb}",
                                                    "default: {kind: external, host: 10.1.2.3}"),
                                    "targets.default.host"),
    "two factors one setting": (MINIMAL.replace("design:", "  sync:\n    a: {server: {log_bin: true}}\ndesign:"),
                                "log_bin"),
    "bad sysbench test": (MINIMAL.replace("kind: proc_insert_loop, rows: 10", "kind: sysbench, test: rm_rf"),
                          "workloads.ins.test"),
    "top level list": ("- 1\n- 2\n", "(top level)"),
    "sequential min above max": (MINIMAL.replace("warmup: 0}",
                                                 "warmup: 0, sequential: {min_blocks: 9, max_blocks: 3}}"),
                                 "design.sequential.min_blocks"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_params_name_file_and_field(write_params, case):
    text, field = BAD[case]
    path = write_params(text)
    with pytest.raises(ConfigError) as err:
        params.load(path, "quick")
    message = str(err.value)
    assert str(path) in message
    assert field in message, message
    assert "\n" not in message


def test_malformed_yaml_names_line(write_params):
    path = write_params("claim: C4\ntargets: {default: [\n")
    with pytest.raises(ConfigError, match=r"line \d+: malformed YAML"):
        params.load(path)


def test_missing_file():
    with pytest.raises(ConfigError, match="no such params file"):
        params.find("does_not_exist")
