"""Which processor a run measured on: VMs of one kind share a model name ("AMD EPYC") across CPU
generations, so family, model, stepping and a hash of the feature flags are recorded, and runs of
one claim from different processors are said to be so when analysed together."""

from __future__ import annotations

import json
import shutil

from claimlab import provenance, report
from conftest import frozen

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC
stepping\t: 1
microcode\t: 0x1000065
flags\t\t: fpu sse2 avx2 avx512f

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 99
model name\t: other
"""


def test_cpu_facts_read_the_first_processor_and_hash_its_flags_in_any_order():
    facts = provenance.cpu_facts(CPUINFO)
    assert facts["vendor"] == "AuthenticAMD"
    assert (facts["family"], facts["model"], facts["stepping"]) == ("26", "2", "1")
    assert facts["microcode"] == "0x1000065"
    reordered = CPUINFO.replace("fpu sse2 avx2 avx512f", "avx512f avx2 sse2 fpu")
    assert facts["flags_sha"] == provenance.cpu_facts(reordered)["flags_sha"]
    assert facts["flags_sha"] != provenance.cpu_facts(CPUINFO.replace(" avx512f", ""))["flags_sha"]
    assert provenance.cpu_facts("") == {"vendor": None, "family": None, "model": None, "stepping": None,
                                        "microcode": None, "flags_sha": None}


def test_this_hosts_facts_name_its_processor_family():
    host = provenance.host_facts()
    assert host["cpu"]["family"] and host["cpu"]["flags_sha"]
    assert f"family {host['cpu']['family']}" in provenance.cpu_label(host)
    assert provenance.cpu_label({"cpu_model": "AMD EPYC"}) == "AMD EPYC (family not recorded)"


def _copy_run(name: str, dest, cpu: dict | None):
    source = frozen(name)
    target = dest / source.name
    shutil.copytree(source, target)
    manifest = json.loads((target / "manifest.json").read_text())
    if cpu is None:
        manifest["provenance"]["host"].pop("cpu", None)   # as runs made before the family was recorded
    else:
        manifest["provenance"]["host"]["cpu"] = cpu
    (target / "manifest.json").write_text(json.dumps(manifest))
    return target


def test_runs_of_one_claim_on_different_processors_are_noted(tmp_path):
    runs = ["c1", "format_1"]   # runs of two claims: the note reads their manifests only
    zen5 = {"vendor": "AuthenticAMD", "family": "26", "model": "2", "stepping": "1"}
    same = [_copy_run(run, tmp_path / "a", zen5) for run in runs]
    assert report._hardware_note(same) == ()
    mixed = [_copy_run(runs[0], tmp_path / "b", zen5), _copy_run(runs[1], tmp_path / "b", None)]
    (note,) = report._hardware_note(mixed)
    assert note.startswith("runs on processors that differ or were not recorded: "
                           "AMD EPYC (AuthenticAMD family 26 model 2 stepping 1): 1 run")
    assert "AMD EPYC (family not recorded): 1 run" in note
