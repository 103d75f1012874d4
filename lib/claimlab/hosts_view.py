"""The per-host view of runs measured on several hosts: each host's runs analysed on their own,
then pooled by host, in words for the terminal and as a table for the summary.

Why apart from the cluster client: the view reads stored runs only (the host each manifest
names), so it serves runs from `claimlab run --scheduler` and from `claimlab import` alike, and
needs no Dask.
"""

from __future__ import annotations

from pathlib import Path

from .store import load_manifest


def host_of(path: Path) -> tuple[str, str]:
    """(the worker's name, the processor in words) of a stored run; "local" for a run made here."""
    from .provenance import cpu_label
    host = load_manifest(path).provenance.get("host") or {}
    return str(host.get("worker_name") or "local"), cpu_label(host)


def host_tables(run_ids: list[str], data_root: Path | None = None):
    """(per-host rows, pooled rows) over every claim of `run_ids`: each host's runs analysed on
    their own (its own table), then pooled by host (`stats.hosts`)."""
    import pandas as pd

    from .report import analyze_runs
    from .stats import hosts as by_host
    from .store import find_run
    groups: dict[str, list[str]] = {}
    cpus = {}
    for run_id in run_ids:
        name, cpu = host_of(find_run(run_id, data_root))
        groups.setdefault(name, []).append(run_id)
        cpus[name] = cpu
    tables: dict[str, dict[str, pd.DataFrame]] = {}
    claims = {}
    for name, ids in groups.items():
        for analysis in analyze_runs(ids, data_root):
            tables.setdefault(analysis.claim.id, {})[name] = analysis.table
            claims[analysis.claim.id] = analysis.claim
    per = [by_host.per_host(t, cpus) for t in tables.values()]
    pooled = [by_host.pool(p, claims[claim]) for claim, p in zip(tables, per)]
    return (pd.concat(per, ignore_index=True) if per else by_host.per_host({}),
            pd.concat(pooled, ignore_index=True) if pooled else pd.DataFrame(columns=list(by_host.POOLED_COLUMNS)))


def host_lines(per_host, pooled) -> list[str]:
    """The per-host view in words: one line per host (processor, ratio, verdict), then the pool."""
    lines = []
    for (claim, comparison, target), group in per_host.groupby(["claim", "comparison", "target"], sort=False):
        lines.append(f"{claim} {comparison} [{target}]")
        for r in group.itertuples(index=False):
            lines.append(f"  {r.host:<12} {r.processor}: {r.estimate:.3g} [{r.ci_low:.3g}, {r.ci_high:.3g}] "
                         f"{r.verdict_label}")
        p = pooled[(pooled["claim"] == claim) & (pooled["comparison"] == comparison)
                   & (pooled["target"] == target)].iloc[0]
        tau = "" if p["tau"] != p["tau"] else f", between-host sd {p['tau']:.3g} (log scale)"
        lines.append(f"  pooled over {p['n_hosts']} hosts: {p['estimate']:.3g} [{p['ci_low']:.3g}, "
                     f"{p['ci_high']:.3g}]{tau}: {p['verdict_label']}; holds on {p['holds_on']} host: "
                     f"supported on {p['hosts_supported']}")
    return lines


HOLDS_WORDS = {"every": "holds on every host", "some": "holds on some hosts", "none": "holds on no host"}


def host_view(per_host, pooled, table=None):
    """The per-host view for people (`host_tables`' frames): for each comparison and server, one
    row per host (its processor, ratio [interval] and verdict), then the pooled row (the pooled
    ratio [interval], the spread between hosts, and whether the claim holds on every host, on
    some or on none). `table`, the verdict table of the same runs, names comparisons and servers
    as the rest of the report does; without it they read as keys and target names."""
    import pandas as pd

    from . import cards, wording
    words, servers = {}, {}
    if table is not None and len(table):
        workload = wording.several_workloads(table)
        for r in table[table["target"].notna()].to_dict("records"):
            key = (r["claim"], r["comparison"], r["target"])
            words[key] = wording.comparison_words(r, workload=workload)
            servers[key] = wording.server_name(r.get("server_version"), r["target"])

    rows = []
    for key, group in per_host.groupby(["claim", "comparison", "target"], sort=False):
        claim, comparison, target = key
        named = {"claim": claim, "comparison": words.get(key, cards.comparison_label(comparison)),
                 "server": servers.get(key, target)}
        for r in group.itertuples(index=False):
            rows.append(named | {"host": r.host, "processor": r.processor,
                                 "ratio [interval]": wording.interval(r.estimate, r.ci_low, r.ci_high),
                                 "verdict": r.verdict_label})
        p = pooled[(pooled["claim"] == claim) & (pooled["comparison"] == comparison)
                   & (pooled["target"] == target)].iloc[0]
        spread = (f"hosts read {wording.number(p['host_low'])} to {wording.number(p['host_high'])}"
                  + ("" if p["tau"] != p["tau"] else
                     f"; between-host SD {wording.percent(p['tau'])} (log scale, beyond each host's noise)"))
        rows.append(named | {"host": f"pooled over {p['n_hosts']} hosts", "processor": spread,
                             "ratio [interval]": wording.interval(p["estimate"], p["ci_low"], p["ci_high"]),
                             "verdict": f"{p['verdict_label']}; {HOLDS_WORDS.get(p['holds_on'], p['holds_on'])} "
                                        f"({p['hosts_supported']} supported)"})
    return pd.DataFrame(rows, columns=["claim", "comparison", "server", "host", "processor", "ratio [interval]",
                                       "verdict"])


def host_view_html(run_ids: list[str], table=None, data_root: Path | None = None) -> str:
    """The summary's per-host view of `run_ids`: the table of `host_view` when they come from
    several hosts, else one line saying they come from one (naming it and its processor)."""
    import html

    from . import wording
    from .store import find_run
    hosts: dict[str, set[str]] = {}
    for run_id in run_ids:
        name, cpu = host_of(find_run(run_id, data_root))
        hosts.setdefault(name, set()).add(cpu)
    if len(hosts) < 2:
        if not hosts:
            return "<p>No run to show by host.</p>"
        name, cpus = next(iter(hosts.items()))
        processors = html.escape("; ".join(sorted(cpus)))
        if name == "local":   # made without a cluster: no host name was recorded, only the processor
            made = f"were made outside a Dask cluster, with no host name recorded (processors: {processors})"
        else:
            made = f"come from one host ({html.escape(name)}: {processors})"
        return (f"<p>All {len(run_ids)} runs {made}, so there is no per-host view: runs from several "
                "hosts (<code>claimlab run --scheduler</code>, or <code>claimlab import</code>) give one.</p>")
    per_host, pooled = host_tables(run_ids, data_root)
    return wording.table_html(
        host_view(per_host, pooled, table),
        caption=f"{len(hosts)} hosts: each host's own analysis, then the hosts pooled (random effects, "
                "Hartung-Knapp interval); the verdict says on how many hosts the claim holds")
