"""Numbers, levels, comparisons and servers as a person says them, and people-formatted tables."""

import math

import numpy as np
import pandas as pd

from claimlab import wording


def test_numbers_for_people_have_no_scientific_notation_nan_or_booleans():
    assert wording.number(0.0000131) == "0.0000131"
    assert wording.number(98272.4) == "98,300"
    # rounding up across a power of ten keeps `digits` significant digits, not one more
    assert wording.number(0.0001) == "0.000100"
    assert wording.number(0.000099996) == "0.000100"
    assert wording.number(0.00099996) == "0.00100"
    assert wording.number(999.96) == "1,000"
    assert wording.number(9.9996) == "10.0"
    assert wording.number(10) == "10" and wording.number(12345) == "12,300"
    assert wording.number(-0.000099996) == "-0.000100"
    assert wording.number(np.int64(10)) == "10" and wording.number(np.float64(0.000099996)) == "0.000100"
    assert wording.number(math.nan) == "—" and wording.number(None) == "—"
    assert wording.number(True) == "yes"
    html = wording.table_html(pd.DataFrame({"a": [1.23456e-5, math.nan], "b": [True, None]}))
    for bad in ("e-05", "nan", "NaN", "None", "True", "<th></th>"):
        assert bad not in html
    html = wording.table_html(pd.DataFrame({"slow": ["90.000000", "0.000000", "0.150000", "8.0.40", "O_DIRECT"],
                                              "why": ["cumulative", "x" * 30, "", "", ""]}))
    assert ">90<" in html and ">0<" in html and ">0.15<" in html and ">8.0.40<" in html
    assert "<td>cumulative</td>" in html and "<td class=long>" + "x" * 30 in html   # only long words may break


def test_server_names_read_as_a_person_says_them():
    assert wording.server_name("10.11.19-MariaDB-0+deb12u1, 10.11.19-MariaDB-0+deb12u1-log") == "MariaDB 10.11.19"
    assert wording.server_name("9.7.4-2") == "MySQL 9.7.4"
    assert wording.server_name("5.7.44-log, 8.0.40") == "MySQL 5.7.44, MySQL 8.0.40"
    assert wording.server_name(math.nan, "mysql80") == "target mysql80" and wording.server_name(None) == ""
    results = pd.DataFrame({"target": ["mariadb", "mariadb", "mysql"],
                            "server_version": ["10.11.19-MariaDB-0+deb12u1-log", "10.11.19-MariaDB-0+deb12u1",
                                               "9.7.4-2"]})
    assert wording.server_names(results) == {"mariadb": "MariaDB 10.11.19", "mysql": "MySQL 9.7.4"}


def test_claim_family_is_the_sources_server_not_a_multiplicity_family():
    from claimlab.claims import load_claims
    from claimlab.store import project_root
    claims = load_claims(project_root() / "data" / "claims.yaml")
    families = {c: wording.claim_family(claims[c]) for c in ("C1", "C2", "C4")}
    assert families == dict.fromkeys(("C1", "C2", "C4"), "mysql")


def test_top_function_shares_line_up_with_one_decimal():
    html = wording.table_html(pd.DataFrame({"function": ["f", "g"], "on (% of samples)": [12.9, 0.0],
                                              "off (% of samples)": [0.9, 7.0]}), default=wording.share_points)
    assert ">12.9<" in html and ">0.9<" in html and ">7.0<" in html and ">—<" in html and ">f<" in html


def test_a_level_named_by_its_server_names_the_version_its_params_pin():
    """A reader sees "MySQL 5.7.23", so it must be the release the level's target runs."""
    import yaml

    from conftest import ROOT
    doc = yaml.safe_load((ROOT / "params" / "insert_57_vs_80.yaml").read_text())
    pinned = {name: level["target"] for name, level in doc["factors"]["server"].items()
              if isinstance(level, dict) and "target" in level}
    assert pinned, "the server factor pins no level to a target"
    for name, target in pinned.items():
        version = doc["targets"][target]["version"]
        assert version in wording.LEVEL_WORDS["server"][name], (name, version)
