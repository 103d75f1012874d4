"""Cost tables: one readable scale per cost, never a cost below zero."""

import pandas as pd

from claimlab import cost_tables


def _cost(metric, mean, server=None):
    row = dict(workload="w", condition="a", metric=metric, unit="1/op", n_reps=2, mean=mean, lo=mean * 0.9,
               hi=mean * 1.1, contention="included")
    return {**row, **({"server": server} if server else {})}


def test_cost_view_drops_all_zero_costs_and_scales_each_cost_to_read_without_leading_zeros():
    view = cost_tables.cost_view(pd.DataFrame([_cost("server_cpu_user_s/op", 1.3e-5),
                                             _cost("status.Binlog_commits/op", 0.0)]))
    assert view.to_dict("records") == [{"cost": "server CPU, user", "condition": "a",
                                        "mean [95% interval]": "13.0 [11.7, 14.3]", "unit": "µs/op"}]
    view = cost_tables.cost_view(pd.DataFrame([_cost("client_cpu_s/op", 2.27e-9, "MySQL 9.7.4"),
                                             _cost("client_cpu_s/op", 2.5e-8, "MariaDB 10.11.19"),
                                             _cost("status.Innodb_os_log_fsyncs/op", 4.15e-4, "MySQL 9.7.4"),
                                             _cost("status.Innodb_os_log_fsyncs/op", 1.01, "MariaDB 10.11.19"),
                                             _cost("server_ctx_voluntary/op", 3.5e-3, "MySQL 9.7.4")]))
    assert list(view.columns) == ["cost", "condition", "MariaDB 10.11.19", "MySQL 9.7.4", "unit"]   # side by side
    assert list(view["unit"]) == ["ns/op", "fsyncs/op", "switches per 1,000 ops"]
    assert view.iloc[0, 2:4].tolist() == ["25.0 [22.5, 27.5]", "2.27 [2.04, 2.50]"]
    # one scale per cost, shared by the servers: MySQL's 0.000415 fsyncs/op stays comparable to MariaDB's 1.01
    assert view.iloc[1, 2:4].tolist() == ["1.01 [0.909, 1.11]", "0.000415 [0.000374, 0.000457]"]
    assert view.iloc[2, 2:4].tolist() == ["—", "3.50 [3.15, 3.85]"]
    assert cost_tables.cost_scale(4.15e-4, "fsyncs") == (1e6, "fsyncs per million ops")
    assert cost_tables.cost_scale(1e-12, "s") == (1e9, "ns/op")        # the finest scale, never beyond


def test_no_cost_is_shown_below_zero():
    # Before: MariaDB's voluntary context switches read -106 [-410, 4.09] per million ops.
    cost = pd.DataFrame([_cost("server_ctx_voluntary/op", -1.06e-4, "MariaDB 10.11.19"),
                         _cost("server_ctx_voluntary/op", 3.13e-5, "MySQL 9.7.4")])
    cost.loc[0, ["lo", "hi"]] = [-4.10e-4, 4.09e-6]
    html = cost_tables.cost_html(cost)
    assert "-" not in html.replace("per-thread", "") and "0 [0, 4.09] ‡" in html and "31.3 [28.2, 34.4]<" in html
    assert cost_tables.CLIPPED_NOTE.split(":")[0] in html
    assert "‡" not in cost_tables.cost_html(cost.iloc[1:])


def test_the_workload_column_says_what_each_workload_is():
    # Before: C3's cost table read "bulk_insert" and "insert_loop", the params files' keys.
    cost = pd.DataFrame([{**_cost("client_cpu_s/op", 1e-6), "workload": "insert_loop"},
                         {**_cost("client_cpu_s/op", 2e-6), "workload": "bulk_insert"},
                         {**_cost("client_cpu_s/op", 3e-6), "workload": "oltp_ps"}])
    assert list(cost_tables.cost_view(cost)["workload"]) == [
        "insert loop", "bulk insert", "sysbench oltp_read_write, prepared statements"]
