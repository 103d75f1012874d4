"""The claims file loads into validated dataclasses; anything malformed is refused by name."""

import copy
from pathlib import Path

import pytest
import yaml

from claimlab.claims import Comparison, Condition, load_claims, parse_claims
from claimlab.errors import ConfigError

CLAIMS_YAML = Path(__file__).resolve().parents[2] / "data" / "claims.yaml"


@pytest.fixture(scope="module")
def claims():
    return load_claims(CLAIMS_YAML)


@pytest.fixture()
def raw():
    return yaml.safe_load(CLAIMS_YAML.read_text(encoding="utf-8"))


def comparisons(claim):
    return {comparison.name: comparison for comparison in claim.comparisons}


def test_the_four_claims_and_their_published_ratios(claims):
    assert list(claims) == ["C1", "C2", "C3", "C4"]
    expected = {
        "C1": {"mismatch_vs_latin1": 0.7509, "mismatch_vs_utf8mb4": None, "utf8mb4_vs_latin1": None,
               "utf8mb4_vs_latin1_ps": None},
        "C2": {"uca_ai_vs_utf8mb3": 1.29, "utf8mb4_general_vs_utf8mb3": None,
               "unicode_vs_general": None, "utf8mb4_general_vs_latin1": None},
        "C3": {"v80_vs_v57_insert": 3.30, "v80_skiplogbin_vs_v57_insert": 1.15,
               "defaults80_vs_defaults57_insert": 3.30, "defaults_vs_v57_values_insert": 3.30,
               "v80_vs_v57_bulk_insert": None, "v97_vs_v57_insert": 3.30, "v80_vs_fork_bulk_insert": None,
               "v80_vs_v8027_join": None, "v80_vs_fork_join": None},
        "C4": {"binlog_on_vs_off": 2.85, "log_bin_off_spelling_vs_on": None, "log_bin_0_vs_on": None},
    }
    for claim_id, ratios in expected.items():
        found = comparisons(claims[claim_id])
        assert {name: found[name].published_ratio for name in found} == ratios


def test_published_ratios_follow_from_the_published_figures(claims):
    figures = {claim_id: {figure.what: figure.value for figure in claim.published}
               for claim_id, claim in claims.items()}
    c1, c2, c3, c4 = (figures[claim_id] for claim_id in ("C1", "C2", "C3", "C4"))
    qps = c1["QPS, server utf8mb4, client latin1 (mismatch)"] / c1["QPS, everything latin1"]
    assert qps == pytest.approx(0.7509, abs=1e-4)
    scan = c2["scan, utf8mb4_0900_ai_ci, Xeon Platinum 8163 2.7 GHz"]
    assert scan / c2["scan, utf8mb3_general_ci, Xeon Platinum 8163 2.7 GHz"] == pytest.approx(1.29, abs=0.005)
    assert c3["call idata(), MySQL 8.0"] / c3["call idata(), MySQL 5.7"] == pytest.approx(3.30, abs=0.01)
    assert c3["skip-log-bin, MySQL 8.0"] / c3["skip-log-bin, MySQL 5.7"] == pytest.approx(1.15, abs=0.01)
    on, off = c4["insert loop, 8.0, binlog on, write-set extraction on"], c4[
        "insert loop, 8.0, binlog off (skip-log-bin)"]
    assert on / off == pytest.approx(2.85, abs=0.01)
    assert c4["ratio binlog on / off, write-set extraction off"] == 2.10
    assert c3["rows inserted, as stated in the text"] == 1_000_000
    assert c3["rows inserted, loop bound in the code"] == 100_000


def test_comparisons_carry_what_a_verdict_needs(claims):
    c1, c3 = comparisons(claims["C1"]), comparisons(claims["C3"])
    null = c1["mismatch_vs_utf8mb4"]
    assert (null.kind, null.direction, null.equivalence_margin) == ("null", None, 0.05)
    assert c1["mismatch_vs_latin1"].direction == "lower"
    assert c1["mismatch_vs_latin1"].baseline == Condition.of({"charset": "latin1"})
    assert c1["mismatch_vs_latin1"].source_target == "MySQL 5.7.28"
    assert comparisons(claims["C2"])["unicode_vs_general"].direction == "two_sided"
    assert c3["v80_vs_v57_insert"].baseline.levels == (("server", "mysql57"),)
    assert "not the server versions" in c3["defaults80_vs_defaults57_insert"].note
    assert "uca1400" in comparisons(claims["C2"])["uca_ai_vs_utf8mb3"].note
    assert comparisons(claims["C4"])["binlog_on_vs_off"].treatment.label == "binlog=on"


def test_family_is_an_optional_name_never_mixing_effects_and_equivalence(raw):
    """Comparisons in one family are corrected for multiplicity together (stats.analyze)."""
    effect, null = raw["claims"]["C1"]["comparisons"][0], raw["claims"]["C1"]["comparisons"][1]
    assert (effect["kind"], null["kind"]) == ("effect", "null")
    effect["family"] = "charset"
    assert comparisons(parse_claims(raw, "x")["C1"])["mismatch_vs_latin1"].family == "charset"
    null["family"] = "charset"
    with pytest.raises(ConfigError, match="family charset mixes effect and null") as error:
        parse_claims(raw, "x")
    assert error.value.field == "claims.C1"
    null.pop("family")
    effect["family"] = 3
    with pytest.raises(ConfigError, match="expected a string") as error:
        parse_claims(raw, "x")
    assert error.value.field == "claims.C1.comparisons[0].family"


@pytest.mark.parametrize(
    ("edit", "field", "allowed"),
    [
        (lambda d: d.update(extra=1), "extra", "claims, version"),
        (lambda d: d["claims"]["C1"].update(titel="x"), "claims.C1.titel",
         "comparisons, notes, published, setup, source_target, sources, title"),
        (lambda d: d["claims"]["C4"]["comparisons"][0].update(publised_ratio=2.85),
         "claims.C4.comparisons[0].publised_ratio",
         "baseline, direction, equivalence_margin, experiment, family, kind, metric, name, note, "
         "published_ratio, source_target, statistic, treatment, workload"),
        (lambda d: d["claims"]["C4"]["published"][0].update(units="s"), "claims.C4.published[0].units",
         "note, unit, value, what"),
    ],
)
def test_unknown_keys_are_rejected_with_their_path(raw, edit, field, allowed):
    edit(raw)
    with pytest.raises(ConfigError, match="unknown key") as error:
        parse_claims(raw, "claims.yaml")
    assert error.value.field == field
    assert str(error.value).endswith(f"(allowed: {allowed})")
    assert error.value.source == "claims.yaml"


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (lambda c: c.update(published_ratio=1.0), "claims.C4.comparisons[0]", "kind 'null'"),
        (lambda c: c.update(direction="lower"), "claims.C4.comparisons[0]", "implies direction"),
        (lambda c: c.update(published_ratio=True), "claims.C4.comparisons[0].published_ratio",
         "expected a number"),
        (lambda c: c.update(kind="null"), "claims.C4.comparisons[0]", "no ratio or direction"),
        (lambda c: c.update(kind="maybe"), "claims.C4.comparisons[0]", "kind must be"),
        (lambda c: c.update(baseline={"binlog": False}), "claims.C4.comparisons[0].baseline.binlog",
         "quote"),
        (lambda c: c.update(baseline={"log": "off"}), "claims.C4.comparisons[0]", "same factors"),
        (lambda c: c.update(treatment={"binlog": "off"}), "claims.C4.comparisons[0]", "same condition"),
        (lambda c: c.update(equivalence_margin=1.5), "claims.C4.comparisons[0]", "margin"),
        (lambda c: c.update(published_ratio=1.04), "claims.C4.comparisons[0]",
         r"1.04 lies inside the no-effect band \[0.952, 1.05\] \(margin 0.05\): declare an "
         r"equivalence_margin below 0.04"),
        (lambda c: c.update(published_ratio=0.92, equivalence_margin=0.1), "claims.C4.comparisons[0]",
         "inside the no-effect band .* below 0.087"),
        (lambda c: c.pop("metric"), "claims.C4.comparisons[0].metric", "is required"),
        (lambda c: c.update(name="Binlog On"), "claims.C4.comparisons[0].name", "snake_case"),
        (lambda c: c.update(published_ratio=float("nan")), "claims.C4.comparisons[0].published_ratio",
         "finite"),
        (lambda c: c.update(baseline={}), "claims.C4.comparisons[0].baseline", "mapping of factor to level"),
        (lambda c: c.update(metric="  "), "claims.C4.comparisons[0].metric", "must not be empty"),
    ],
)
def test_invalid_comparisons_are_refused(raw, edit, field, message):
    edit(raw["claims"]["C4"]["comparisons"][0])
    with pytest.raises(ConfigError, match=message) as error:
        parse_claims(raw, "claims.yaml")
    assert error.value.field == field


def test_duplicate_comparison_names_and_bad_ranges_are_refused(raw):
    duplicated = copy.deepcopy(raw)
    duplicated["claims"]["C4"]["comparisons"].append(duplicated["claims"]["C4"]["comparisons"][0])
    with pytest.raises(ConfigError, match="repeat"):
        parse_claims(duplicated, "x")
    raw["claims"]["C2"]["published"][0]["value"] = [16, 12]
    with pytest.raises(ConfigError, match="low, high") as error:
        parse_claims(raw, "x")
    assert error.value.field == "claims.C2.published[0]"


def test_file_errors_name_the_file(tmp_path):
    broken = tmp_path / "claims.yaml"
    broken.write_text("claims: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="malformed YAML") as error:
        load_claims(broken)
    assert error.value.source == str(broken)
    with pytest.raises(ConfigError, match="cannot read"):
        load_claims(tmp_path / "absent.yaml")
    broken.write_text("claims: {}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="non-empty mapping"):
        load_claims(broken)
    broken.write_text("version: 1\nversion: 2\nclaims: {}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="duplicated key 'version'"):
        load_claims(broken)


def test_comparison_validates_when_built_directly():
    with pytest.raises(ValueError, match="a direction"):
        Comparison(name="x", experiment="e", workload="w", metric="m",
                   baseline=Condition.of({"f": "a"}), treatment=Condition.of({"f": "b"}),
                   kind="effect", source_target="MySQL 8.0")


@pytest.mark.parametrize("ratio, accepted", [(0.951, True), (0.9525, False), (1.049, False), (1.051, True),
                                             (1 / 1.051, True), (1 / 1.049, False)])
def test_a_published_effect_is_refused_inside_the_verdicts_band_and_only_there(raw, ratio, accepted):
    """The band is [1/(1+m), 1+m] (symmetric on the log scale, as the verdicts use it): 0.951
    lies outside it at m = 0.05 and is a testable effect, though |0.951 - 1| <= 0.05."""
    raw["claims"]["C4"]["comparisons"][0].update(published_ratio=ratio, direction=None)
    raw["claims"]["C4"]["comparisons"][0].pop("direction")
    if accepted:
        assert parse_claims(raw, "claims.yaml")["C4"].comparisons[0].published_ratio == ratio
    else:
        with pytest.raises(ConfigError, match="inside the no-effect band"):
            parse_claims(raw, "claims.yaml")
