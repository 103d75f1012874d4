"""data/claims.yaml and params/ must agree: a comparison naming a workload, factor or level that
its experiment does not have would silently end up `not_tested`."""

import pytest

from claimlab import params
from claimlab.claims import load_claims
from conftest import ROOT

CLAIMS = load_claims(ROOT / "data" / "claims.yaml")
COMPARISONS = [(c, cmp) for c in CLAIMS.values() for cmp in c.comparisons]


@pytest.mark.parametrize("claim, comparison", COMPARISONS, ids=[f"{c.id}-{cmp.name}" for c, cmp in COMPARISONS])
def test_comparison_refers_to_what_its_experiment_runs(claim, comparison):
    exp = params.load(ROOT / "params" / f"{comparison.experiment}.yaml", "full")
    assert exp.claim == claim.id
    assert comparison.workload in {w.name for w in exp.workloads}
    levels = {}    # over every target's runs: a file's `levels_for` may keep some levels to one target
    for factors in exp.target_factors.values():
        for f in factors:
            levels.setdefault(f.name, set()).update(lv.name for lv in f.levels)
    for side in (comparison.baseline, comparison.treatment):
        for factor, level in side.levels:
            assert factor in levels, f"{comparison.name}: no factor {factor!r} in {comparison.experiment}"
            assert level in levels[factor], f"{comparison.name}: no level {factor}={level}"


def test_every_experiment_has_a_claim_with_comparisons():
    experiments = {cmp.experiment for _, cmp in COMPARISONS}
    assert experiments == {p.stem for p in (ROOT / "params").glob("*.yaml")}
