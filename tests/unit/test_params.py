"""Params files: every shipped file loads, and malformed ones fail naming the file and field."""

import dataclasses
import re

import pytest

from claimlab import ablation, design, params, records, schema, target_params
from claimlab import workloads as wl
from claimlab.design import conditions
from claimlab.errors import ConfigError
from claimlab.servers import KINDS, ServerOptions
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


def test_a_profile_may_measure_only_some_workloads(write_params):
    two = MINIMAL.replace("  ins: {kind: proc_insert_loop, rows: 10}\n",
                          "  ins: {kind: proc_insert_loop, rows: 10}\n  bulk: {kind: bulk_insert, rows: 100}\n")
    text = two + "profiles:\n  quick: {measure: [bulk]}\n"
    assert [w.name for w in params.load(write_params(text), "quick").workloads] == ["bulk"]
    assert [w.name for w in params.load(write_params(text), "full").workloads] == ["ins", "bulk"]
    for measure, message in [("[blk]", "profiles.quick.measure: no workload named 'blk'"),
                             ("[]", "profiles.quick.measure: a profile must measure at least one workload")]:
        with pytest.raises(ConfigError) as err:
            params.load(write_params(two + f"profiles:\n  quick: {{measure: {measure}}}\n"), "quick")
        assert message in str(err.value), str(err.value)


def test_a_profile_may_give_a_target_its_own_design(write_params):
    two = MINIMAL.replace("  default: {kind: mariadb}\n", "  default: {kind: mariadb}\n  other: {kind: mariadb}\n")
    text = two + "profiles:\n  quick:\n    design: {iterations: 5}\n    design_for: {other: {repetitions: 4}}\n"
    exp = params.load(write_params(text), "quick")
    assert (exp.design.repetitions, exp.design.iterations) == (2, 5)          # the default target's
    other = params.with_default_target(exp, "other", "--target")
    assert (other.design.repetitions, other.design.iterations, other.design.target) == (4, 5, "other")
    assert params.with_default_target(other, "default", "--target").design.repetitions == 2
    first = text.replace("design_for: {other:", "design_for: {default:")
    assert params.load(write_params(first), "quick").design.repetitions == 4   # no --target needed
    for over, message in [("{nope: {repetitions: 4}}", "profiles.quick.design_for.nope: no target named 'nope'"),
                          ("{other: {target: default}}", "profiles.quick.design_for.other.target: a target's own"),
                          ("{other: {repetitions: 0}}", "profiles.quick.design_for.other.repetitions")]:
        with pytest.raises(ConfigError) as err:
            params.load(write_params(text.replace("{other: {repetitions: 4}}", over)), "quick")
        assert message in str(err.value), str(err.value)



def test_levels_pinned_to_other_targets_run_with_one_default_target_only(write_params):
    """`levels_for` keeps some levels to the runs on one target (C3's real versions run in the
    run on MySQL 9.7, not again in MariaDB's), and the report never runs a design on a target
    that one of its levels pins."""
    from claimlab.campaign import chosen_targets
    text = MINIMAL.replace("  default: {kind: mariadb}\n", "  default: {kind: mariadb}\n  other: {kind: mariadb}\n"
                           "  pinned: {kind: mariadb}\n") \
        .replace('    "on": {server: {log_bin: true}}\n',
                 '    "on": {server: {log_bin: true}}\n    "there": {target: pinned}\n') \
        + 'levels_for:\n  default: {binlog: ["off", "on"]}\n'
    exp = params.load(write_params(text), "quick")
    assert [c.id for c in conditions(exp)] == ["binlog=off", "binlog=on"]
    other = params.with_default_target(exp, "other", "--target")
    assert [c.id for c in conditions(other)] == ["binlog=off", "binlog=on", "binlog=there"]
    assert [c.id for c in conditions(params.with_default_target(other, "default", "--target"))] == [
        "binlog=off", "binlog=on"]
    assert chosen_targets(exp, ["default", "other", "pinned"]) == ["default", "other"]
    smoke = text + 'profiles:\n  smoke: {levels: {binlog: ["there"]}}\n'
    for bad, message in [(text.replace('default: {binlog: ["off", "on"]}', 'nope: {binlog: ["on"]}'),
                          "levels_for.nope: no target named 'nope'"),
                         (text.replace('{binlog: ["off", "on"]}', '{binlog: ["of"]}'),
                          "levels_for.default.binlog: no level named 'of'"),
                         (smoke, "levels_for.default: keeps no level of a factor in profile smoke")]:
        with pytest.raises(ConfigError) as err:
            params.load(write_params(bad), "smoke" if bad is smoke else "quick")
        assert message in str(err.value), str(err.value)

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
    "fast rounds that add none": (MINIMAL.replace("warmup: 0}", "warmup: 0, fast_rounds: {metric: elapsed_s, count: 1, "
                                                  "max_iterations: 1}}"),
                                  "design.fast_rounds.max_iterations: 1 adds no round to 1 iterations"),
    "fast rounds without a metric": (MINIMAL.replace("warmup: 0}", "warmup: 0, fast_rounds: {count: 2}}"),
                                     "design.fast_rounds.metric"),
    "fast rounds fastest neither": (MINIMAL.replace("warmup: 0}", "warmup: 0, fast_rounds: {metric: qps, "
                                                    "fastest: biggest}}"), "design.fast_rounds.fastest"),
    "fast rounds count over the cap": (MINIMAL.replace("warmup: 0}", "warmup: 0, fast_rounds: {metric: qps, "
                                                       "count: 30}}"), "design.fast_rounds.count"),
    "timed rounds that add none": (MINIMAL.replace("iterations: 1, warmup: 0}", "iterations: 3, warmup: 0, "
                                                   "timed_rounds: {seconds: 5, max_iterations: 3}}"),
                                   "design.timed_rounds.max_iterations: 3 adds no round to 3 iterations"),
    "timed rounds capped at one round": (MINIMAL.replace("warmup: 0}", "warmup: 0, timed_rounds: {seconds: 5, "
                                                         "max_iterations: 1}}"),
                                         "design.timed_rounds.max_iterations"),
    "timed rounds without seconds": (MINIMAL.replace("warmup: 0}", "warmup: 0, timed_rounds: {max_iterations: 9}}"),
                                     "design.timed_rounds.seconds"),
    "timed rounds of no time": (MINIMAL.replace("warmup: 0}", "warmup: 0, timed_rounds: {seconds: 0}}"),
                                "design.timed_rounds.seconds"),
    "timed rounds unknown key": (MINIMAL.replace("warmup: 0}", "warmup: 0, timed_rounds: {second: 5}}"),
                                 "design.timed_rounds.second"),
    "fast rounds unknown key": (MINIMAL.replace("warmup: 0}", "warmup: 0, fast_rounds: {metric: qps, cont: 3}}"),
                                "design.fast_rounds.cont"),
    # numbers without bounds used to pass validate and fail (or exhaust memory) mid-run
    "repetitions in the billions": (MINIMAL.replace("repetitions: 2", "repetitions: 4000000000"),
                                    "design.repetitions: must be <= 1000"),
    "iterations in the billions": (MINIMAL.replace("iterations: 1", "iterations: 4000000000"),
                                   "design.iterations: must be <= 1000"),
    "negative seed": (MINIMAL.replace("warmup: 0}", "warmup: 0, seed: -1}"), "design.seed: must be >= 0"),
    "rows in the billions": (MINIMAL.replace("rows: 10", "rows: 2000000000"), "workloads.ins.rows: must be <="),
    "sysbench table in the billions": (MINIMAL.replace("kind: proc_insert_loop, rows: 10",
                                                       "kind: sysbench, table_size: 5000000000"),
                                       "workloads.ins.table_size: must be <="),
    "nan ready_timeout": (MINIMAL.replace("{kind: mariadb}", "{kind: mariadb, ready_timeout: .nan}"),
                          "targets.default.ready_timeout: must be a finite number"),
    "zero ready_timeout": (MINIMAL.replace("{kind: mariadb}", "{kind: mariadb, ready_timeout: 0}"),
                           "targets.default.ready_timeout: must be >= 1"),
    "port out of range": (MINIMAL.replace("default: {kind: mariadb}",
                                          "default: {kind: external, host: 127.0.0.1, port: 70000}"),
                          "targets.default.port: must be <= 65535"),
    "buffer pool below minimum": (MINIMAL.replace("log_bin: false", "innodb_buffer_pool_size: 1K"),
                                  "factors.binlog.off.server.innodb_buffer_pool_size: 1K is outside"),
    "sync_binlog negative": (MINIMAL.replace("log_bin: false", "sync_binlog: -1"),
                             "factors.binlog.off.server.sync_binlog: must be >= 0"),
    "level override in the billions": (MINIMAL.replace('"off": {server: {log_bin: false}}',
                                                       '"off": {workloads: {ins: {rows: 9000000000}}}'),
                                       "factors.binlog.off.workloads.ins.rows: must be <="),
    "level override changes the kind": (MINIMAL.replace('"off": {server: {log_bin: false}}',
                                                        '"off": {workloads: {ins: {kind: join}}}'),
                                        "factors.binlog.off.workloads.ins.kind"),
    "unquoted on as a level": (MINIMAL.replace('"on":', "on:"), "factors.binlog.True: expected a string"),
    "no targets": (MINIMAL.replace("  default: {kind: mariadb}\n", "").replace("targets:", "targets: {}"),
                   "targets: declare at least one target"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_params_name_file_and_field(write_params, case):
    text, field = BAD[case]
    path = write_params(text)
    with pytest.raises(ConfigError) as err:
        design.conditions(params.load(path, "quick"))   # what `validate` and `run` do first
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


def test_unknown_key_lists_every_allowed_key_not_only_those_present(write_params):
    """The old message listed the keys already in the file as `allowed`."""
    path = write_params(MINIMAL.replace("warmup: 0", "warmup: 0, repetitons: 3"))
    with pytest.raises(ConfigError) as err:
        params.load(path)
    allowed = str(err.value).split("(allowed: ")[1].rstrip(")").split(", ")
    assert set(allowed) == {f.name for f in dataclasses.fields(params.Design)}


@pytest.mark.parametrize("column", records.BASE_COLUMNS + records.TAIL_COLUMNS)
def test_factor_named_like_any_results_column_is_refused(write_params, column):
    """A factor becomes a results.csv column: a clash wrote a file that read_results refused."""
    path = write_params(MINIMAL.replace("binlog:", f"{column}:"))
    with pytest.raises(ConfigError, match=f"factors.{column}: '{column}' is a results column"):
        params.load(path)


def test_every_target_kind_has_a_model():
    assert set(target_params.TARGET_MODELS) == set(KINDS)


def test_every_integer_workload_parameter_is_bounded():
    for kind, cls in wl.KINDS.items():
        for fld in dataclasses.fields(cls):
            if fld.type in (int, "int"):
                model = params.WORKLOAD_MODELS[kind]
                with pytest.raises(ConfigError, match=f"w.{fld.name}: must be <="):
                    schema.validate(model, {"kind": kind, fld.name: 10**12}, "f", "w")


def test_targets_build_the_records_the_servers_use(write_params):
    exp = params.load(write_params(MINIMAL.replace(
        "default: {kind: mariadb}",
        "default: {kind: mariadb, ready_timeout: 5, options: {innodb_buffer_pool_size: 134217728, "
        "extra: {performance_schema: true, max_connections: 50}}}\n"
        "  ext: {kind: external, socket: /run/mysqld/mysqld.sock, password_env: MY_PW}")))
    default, ext = exp.targets["default"], exp.targets["ext"]
    assert default.ready_timeout == 5.0 and default.options == ServerOptions(
        innodb_buffer_pool_size="134217728", extra=(("max_connections", "50"), ("performance_schema", "ON")))
    assert (ext.kind, ext.user, ext.socket, ext.password_env, ext.host) == (
        "external", "root", "/run/mysqld/mysqld.sock", "MY_PW", None)


def test_options_claimlab_sets_for_every_server_are_refused_in_extra(write_params):
    # Before: `extra: {datadir: ...}` came last in the option file and won; the run started a server
    # on a directory claimlab did not own and changed its accounts, then said "complete".
    for extra, message in [
        ("{datadir: /srv/mysql}", "extra.datadir: set by claimlab"),
        ("{skip-networking: 'OFF'}", "extra.skip-networking: set by claimlab"),
        ("{loose-skip-grant-tables: 1}", "extra.loose-skip-grant-tables: set by claimlab"),
        ("{bind-address: 0.0.0.0}", "extra.bind-address: set by claimlab"),
        ("{innodb-data-home-dir: /srv/ibdata}", "extra.innodb-data-home-dir: set by claimlab"),
    ]:
        path = write_params(MINIMAL.replace("default: {kind: mariadb}",
                                            f"default: {{kind: mariadb, options: {{extra: {extra}}}}}"))
        with pytest.raises(ConfigError, match=re.escape(message)):
            params.load(path)
    # what an experiment varies stays allowed, whatever its spelling
    assert ServerOptions(extra=(("back_log", "80"), ("loose-innodb-undo-log-truncate", "OFF"))).extra
    with pytest.raises(ValueError, match="extra.socket: set by claimlab"):   # the record, as `diff --set` builds it
        ServerOptions(extra=(("socket", "/tmp/s"),))


def test_anchors_within_bounds_are_allowed(write_params):
    exp = params.load(write_params(MINIMAL.replace(
        "default: {kind: mariadb}", "default: {kind: mariadb, options: &opts {innodb_buffer_pool_size: 64M}}\n"
        "  other: {kind: mariadb, options: *opts}")))
    assert exp.targets["default"].options == exp.targets["other"].options == ServerOptions(
        innodb_buffer_pool_size="64M")


@pytest.mark.parametrize("text, message", [
    ("a: 1\nb: 2\na: 3\n", "line 3: malformed YAML: duplicated key 'a' (first on line 1)"),
    ("a: {x: 1, x: 1}\n", "duplicated key 'x'"),
    ("a: " + "[" * 100 + "]" * 100 + "\n", "nested deeper than 40 levels"),
    ("a: &x [1, *x]\n", "an alias refers to a node that contains it"),
    ("a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
     "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n",
     "aliases expand to more than 100000 values"),
])
def test_yaml_reader_refuses_what_safe_load_accepts(tmp_path, text, message):
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        schema.read_yaml(path)
    assert message in str(err.value) and str(err.value).startswith(str(path))


def test_yaml_reader_refuses_oversized_and_binary_files(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("a: '" + "x" * schema.MAX_FILE_BYTES + "'\n")
    with pytest.raises(ConfigError, match="larger than"):
        schema.read_yaml(big)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"a: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        schema.read_yaml(binary)


def test_errors_never_echo_a_long_value(write_params):
    path = write_params(MINIMAL.replace("log_bin: false", "character_set_server: '" + "x;" * 200_000 + "'"))
    with pytest.raises(ConfigError) as err:
        params.load(path)
    assert "is not a charset/collation name" in str(err.value) or "..." in str(err.value)
    assert len(str(err.value)) < len(str(path)) + 400


def test_ablation_files_use_the_same_validator(tmp_path):
    path = tmp_path / "ablation" / "hunt.yaml"
    path.parent.mkdir()
    base = "workloads: {w: {kind: proc_insert_loop}}\nslow: {log_bin: true}\nfast: {}\n"
    for extra, message in [
        ("design: {repetitions: 4000000000}\n", "design.repetitions: must be <= 1000"),
        ("targets: {ext: {kind: external, host: 127.0.0.1}}\n", "external target cannot be"),
        ("profiles: {smoke: {workload: {rows: 0}}}\n", "profiles.smoke.workload.rows: must be >= 1"),
        ("profiles: {huge: {}}\n", "profiles.huge: unknown profile (allowed: full, quick, smoke)"),
        ("workloads: {w: {kind: join}, v: {kind: join}}\n", "duplicated key 'workloads'"),
    ]:
        path.write_text(base + extra)
        with pytest.raises(ConfigError) as err:
            ablation.load(path, "smoke")
        assert message in str(err.value), str(err.value)
    path.write_text(base.replace("{w: {kind: proc_insert_loop}}", "{w: {kind: join}, v: {kind: join}}"))
    with pytest.raises(ConfigError, match="workloads: an ablation measures exactly one workload"):
        ablation.load(path)


def test_unknown_experiment_lists_the_experiments_there_are(tmp_path):
    (tmp_path / "one.yaml").write_text("")
    (tmp_path / "two.yaml").write_text("")
    with pytest.raises(ConfigError, match=r"no such params file \(there are: one, two\)"):
        params.find("three", tmp_path)
