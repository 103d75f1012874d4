"""Server variables that move benchmark results, and the diff of two servers' effective settings.

Yangsh888 found the binlog by diffing two servers' defaults and toggling them one at a time; the
first step is knowing which of several hundred variables can matter. `CURATED` names them, each
with why, so a diff flags what deserves an ablation and stays quiet about the rest. The values
compared are the servers' own (`ServerFacts`, read back after start), never the option files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .errors import DataError
from .servers import VOLATILE_VARIABLES, ServerFacts
from .store import read_jsonl, read_variables

GROUPS = ("InnoDB", "binlog & replication", "charset & collation", "performance_schema", "buffers",
          "other")

# Beyond servers.VOLATILE_VARIABLES: identities and paths that differ between any two data
# directories. Any variable whose two values are both absolute paths is left out as well.
VOLATILE = VOLATILE_VARIABLES | {"server_uid", "aria_log_dir_path", "wsrep_data_home_dir", "log_bin_index",
                                 "relay_log", "relay_log_info_file", "log_basename", "server_id"}

# name -> (group, why it can change a measurement)
CURATED: dict[str, tuple[str, str]] = {
    # InnoDB durability and I/O
    "innodb_flush_log_at_trx_commit": ("InnoDB", "1 fsyncs the redo log at every commit; 0/2 do not: "
                                                 "dominates single-row autocommit inserts"),
    "innodb_flush_method": ("InnoDB", "O_DIRECT vs buffered I/O changes write and fsync cost"),
    "innodb_doublewrite": ("InnoDB", "writes every page twice to survive torn writes"),
    "innodb_buffer_pool_size": ("InnoDB", "whether the working set fits in memory"),
    "innodb_log_file_size": ("InnoDB", "a small redo log forces frequent checkpoints"),
    "innodb_log_buffer_size": ("InnoDB", "a small log buffer flushes during large transactions"),
    "innodb_io_capacity": ("InnoDB", "background flushing rate"),
    "innodb_io_capacity_max": ("InnoDB", "ceiling for background flushing under pressure"),
    "innodb_adaptive_hash_index": ("InnoDB", "hash lookups for hot index pages; contention on writes"),
    "innodb_change_buffering": ("InnoDB", "defers secondary-index writes"),
    "innodb_autoinc_lock_mode": ("InnoDB", "table-level vs interleaved auto-increment locking"),
    "innodb_use_native_aio": ("InnoDB", "Linux native asynchronous I/O vs simulated"),
    "innodb_stats_persistent": ("InnoDB", "how index statistics (and so plans) are kept"),
    "innodb_file_per_table": ("InnoDB", "one tablespace per table: TRUNCATE and I/O differ"),
    "innodb_page_size": ("InnoDB", "page size changes rows per page and I/O size"),
    "innodb_checksum_algorithm": ("InnoDB", "CPU cost of page checksums"),
    "innodb_lock_wait_timeout": ("InnoDB", "how long contended transactions wait"),
    "innodb_default_row_format": ("InnoDB", "row layout of new tables"),
    "transaction_isolation": ("InnoDB", "read views and gap locks per statement"),
    "tx_isolation": ("InnoDB", "read views and gap locks per statement"),
    # binary log and replication
    "log_bin": ("binlog & replication", "every commit also writes the binary log (two-phase commit)"),
    "sync_binlog": ("binlog & replication", "1 fsyncs the binary log at every commit"),
    "binlog_format": ("binlog & replication", "ROW logs row images, STATEMENT the SQL: volume differs"),
    "binlog_row_image": ("binlog & replication", "FULL logs every column of changed rows"),
    "binlog_checksum": ("binlog & replication", "CRC32 of every binlog event"),
    "binlog_cache_size": ("binlog & replication", "transactions larger than this spill to disk"),
    "binlog_commit_wait_count": ("binlog & replication", "group commit waits to batch fsyncs"),
    "binlog_commit_wait_usec": ("binlog & replication", "group commit waits to batch fsyncs"),
    "binlog_transaction_dependency_tracking": ("binlog & replication", "write-set extraction per row"),
    "transaction_write_set_extraction": ("binlog & replication", "hashes every written row (8.0)"),
    "log_slave_updates": ("binlog & replication", "replicated changes are logged again"),
    "log_replica_updates": ("binlog & replication", "replicated changes are logged again"),
    "gtid_mode": ("binlog & replication", "GTID bookkeeping per transaction"),
    "gtid_strict_mode": ("binlog & replication", "GTID ordering checks per transaction"),
    # charset and collation
    "character_set_server": ("charset & collation", "default charset of new schemas and tables"),
    "collation_server": ("charset & collation", "comparison cost: UCA collations cost more per compare"),
    "character_set_database": ("charset & collation", "charset of the default schema"),
    "collation_database": ("charset & collation", "collation of the default schema"),
    "character_set_client": ("charset & collation", "statements are converted when it differs"),
    "character_set_connection": ("charset & collation", "literals are converted to it"),
    "character_set_results": ("charset & collation", "results are converted to it"),
    "collation_connection": ("charset & collation", "comparisons of literals use it"),
    "character_set_collations": ("charset & collation", "MariaDB's default collation per charset"),
    # performance_schema and instrumentation
    "performance_schema": ("performance_schema", "instrumentation on every wait, stage and statement"),
    "performance_schema_consumer_events_statements_current":
        ("performance_schema", "per-statement event recording"),
    "performance_schema_consumer_events_statements_history":
        ("performance_schema", "per-statement history recording"),
    "general_log": ("performance_schema", "every statement is written to a file"),
    "slow_query_log": ("performance_schema", "statements over a threshold are written to a file"),
    "long_query_time": ("performance_schema", "with the slow log: how many statements are written"),
    "log_queries_not_using_indexes": ("performance_schema", "writes scans to the slow log"),
    "userstat": ("performance_schema", "MariaDB per-user/table statistics on every statement"),
    # buffers and caches
    "query_cache_type": ("buffers", "result cache: repeated reads skip execution, writes invalidate"),
    "query_cache_size": ("buffers", "result cache size (0 disables it)"),
    "sort_buffer_size": ("buffers", "ORDER BY/GROUP BY spill to disk below it"),
    "join_buffer_size": ("buffers", "block nested loop and hash join buffer"),
    "read_buffer_size": ("buffers", "sequential scan buffer"),
    "read_rnd_buffer_size": ("buffers", "sorted row reads"),
    "tmp_table_size": ("buffers", "in-memory temporary tables above it go to disk"),
    "max_heap_table_size": ("buffers", "in-memory temporary tables above it go to disk"),
    "table_open_cache": ("buffers", "reopening tables costs when too small"),
    "table_definition_cache": ("buffers", "reloading table definitions costs when too small"),
    "thread_cache_size": ("buffers", "a thread per connection is created when empty"),
    "key_buffer_size": ("buffers", "MyISAM index cache (also internal temporary tables)"),
    "aria_pagecache_buffer_size": ("buffers", "Aria cache: MariaDB's internal temporary tables"),
    # other
    "sql_mode": ("other", "strictness checks and semantics of statements"),
    "optimizer_switch": ("other", "which plans the optimizer may choose"),
    "optimizer_search_depth": ("other", "planning time for many-table joins"),
    "thread_handling": ("other", "one thread per connection vs a pool"),
    "thread_pool_size": ("other", "concurrency of the thread pool"),
    "max_connections": ("other", "memory reserved per connection"),
    "autocommit": ("other", "a commit (and its fsyncs) per statement"),
    "default_storage_engine": ("other", "engine of new tables"),
    "default_tmp_storage_engine": ("other", "engine of user temporary tables"),
    "big_tables": ("other", "temporary tables go to disk"),
    "skip_name_resolve": ("other", "DNS lookups per connection"),
    "large_pages": ("other", "huge pages for the buffer pool"),
    "version": ("other", "the server build (MariaDB appends -log while the binlog is on)"),
}

_PREFIX_GROUPS = (("innodb_", "InnoDB"), ("binlog_", "binlog & replication"),
                  ("log_bin", "binlog & replication"), ("gtid_", "binlog & replication"),
                  ("relay_", "binlog & replication"), ("slave_", "binlog & replication"),
                  ("replica_", "binlog & replication"), ("rpl_", "binlog & replication"),
                  ("wsrep_", "binlog & replication"), ("character_set", "charset & collation"),
                  ("collation", "charset & collation"), ("performance_schema", "performance_schema"))


def group_of(name: str) -> str:
    """The curated group, else one guessed from the prefix, so uncurated variables sort sensibly."""
    if name in CURATED:
        return CURATED[name][0]
    for prefix, group in _PREFIX_GROUPS:
        if name.startswith(prefix):
            return group
    if name.endswith(("_buffer_size", "_cache_size")):
        return "buffers"
    return "other"


@dataclass(frozen=True)
class VariableDiff:
    """The effective settings of two servers, side by side: what differs, and what may matter."""

    label_a: str
    label_b: str
    table: pd.DataFrame   # group, variable, value_a, value_b, differs, flagged, why

    def __post_init__(self):
        if not self.label_a or not self.label_b or self.label_a == self.label_b:
            raise ValueError("the two sides need two different, non-empty labels")

    @property
    def differences(self) -> pd.DataFrame:
        return self.table[self.table["differs"]].reset_index(drop=True)

    @property
    def flagged(self) -> pd.DataFrame:
        """Differences in curated variables: the candidates for an ablation."""
        return self.table[self.table["flagged"]].reset_index(drop=True)

    def view(self, everything: bool = False) -> pd.DataFrame:
        """For a notebook: the differences (or everything), value columns named by their labels."""
        rows = self.table if everything else self.differences
        return rows.rename(columns={"value_a": self.label_a, "value_b": self.label_b})

    def lines(self, everything: bool = False) -> list[str]:
        """Plain-text rendering, grouped: flagged differences first with why, then the others."""
        rows = self.table if everything else self.differences
        width = max([len(v) for v in rows["variable"]] + [8])

        def cell(r, value):   # a differing value in full: the difference may be at its end (-log)
            return _short(value, 10_000 if r.differs else 24)
        va = max([len(cell(r, r.value_a)) for r in rows.itertuples(index=False)] + [len(self.label_a), 8])
        vb = max([len(cell(r, r.value_b)) for r in rows.itertuples(index=False)] + [len(self.label_b), 8])
        out = [f"  {'variable':<{width}}  {self.label_a:<{va}} {self.label_b:<{vb}}  (! flagged, * differs)"]
        for group in GROUPS:
            part = rows[rows["group"] == group]
            if part.empty:
                continue
            out.append(f"[{group}]")
            for r in part.itertuples(index=False):
                mark = "!" if r.flagged else ("*" if r.differs else " ")
                line = f"{mark} {r.variable:<{width}}  {cell(r, r.value_a):<{va}} {cell(r, r.value_b):<{vb}}"
                out.append(f"{line}  {r.why}" if r.flagged else line.rstrip())
        if len(out) == 1:
            out = ["no differences"]
        return out


def _short(value: object, limit: int = 24) -> str:
    text = "(unset)" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _normal(value: str | None) -> str | None:
    """ON/1 and OFF/0 are the same setting; case never matters for these values."""
    if value is None:
        return None
    text = value.strip().upper()
    return {"1": "ON", "0": "OFF", "TRUE": "ON", "FALSE": "OFF"}.get(text, text)


def diff(a: ServerFacts, b: ServerFacts, label_a: str = "a", label_b: str = "b") -> VariableDiff:
    """Every stable variable of two servers and their versions (ports, paths and identities are
    left out), with `differs` and `flagged` (differs and is in `CURATED`)."""
    va = {"version": a.version} | a.stable_variables()
    vb = {"version": b.version} | b.stable_variables()
    rows = []
    for name in sorted(set(va) | set(vb)):
        x, y = va.get(name), vb.get(name)
        if name in VOLATILE or (x or "").startswith("/") and (y or "").startswith("/"):
            continue
        differs = _normal(x) != _normal(y)
        curated = CURATED.get(name)
        rows.append({"group": group_of(name), "variable": name, "value_a": x, "value_b": y,
                     "differs": differs, "flagged": differs and curated is not None,
                     "why": curated[1] if curated else ""})
    table = pd.DataFrame(rows)
    table["group"] = pd.Categorical(table["group"], GROUPS, ordered=True)
    table = table.sort_values(["group", "flagged", "differs", "variable"],
                              ascending=[True, False, False, True]).reset_index(drop=True)
    return VariableDiff(label_a, label_b, table)


def stored_facts(run_dir: Path, condition: str) -> ServerFacts:
    """What the first server start of `condition` in a stored run reported (servers.jsonl and its
    variables file): a run's configuration diff without starting a server."""
    for record in read_jsonl(Path(run_dir) / "servers.jsonl"):
        if record.get("condition") == condition:
            return ServerFacts(version=record["version"], variables=read_variables(Path(run_dir), record["variables"]),
                               log_bin=bool(record.get("log_bin")))
    raise DataError(f"{run_dir}/servers.jsonl: no server start of condition {condition!r}")
