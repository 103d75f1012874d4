"""Which thread ran the statement, from callgrind's per-thread counts of each window."""

import random

from claimlab.instructions import dispatching_threads, statement_thread


def test_a_background_burst_larger_than_the_statement_is_not_taken_for_it():
    """Counts seen in a failing run: thread 29 counted 20.6M in the second window only, more than
    the statement's two windows together (the largest total picked it)."""
    dumps = [{"34": 7_802_375, "29": 0, "27": 35_364, "30": 17_811},
             {"34": 7_720_421, "29": 20_558_146, "27": 21_238}]
    assert statement_thread(dumps) == "34"


def test_the_statements_thread_is_found_among_random_background_threads():
    """Simulated windows (fixed seed): the statement counts about 7.7M in each; up to twenty
    background threads count little, and one in each window may burst to 1-4 times the
    statement (a different one each time: a thread that bursts in every window is not told apart
    by counts); threads come and go between windows."""
    rng = random.Random(20261206)
    for _ in range(500):
        statement, *bursting = (f"{n:02d}" for n in rng.sample(range(1, 60), 6))
        dumps = []
        for burst in bursting[:rng.randrange(2, 6)]:
            window = {f"{rng.randrange(1, 60):02d}": rng.randrange(0, 50_000) for _ in range(rng.randrange(0, 20))}
            if rng.random() < 0.5:
                window[burst] = int(7_700_000 * rng.uniform(1, 4))
            window[statement] = int(7_700_000 * rng.uniform(0.99, 1.01))
            dumps.append(window)
        assert statement_thread(dumps) == statement


def test_a_background_thread_larger_in_every_window_is_not_taken_for_the_statement():
    """The shape of a clean-clone failure: a background thread (comparing the data dictionary's
    utf8mb3 names) outcounted the statement in both windows; only the statement's thread called
    dispatch_command."""
    dumps = [{"34": 7_802_801, "30": 9_100_000, "28": 87_398}, {"34": 7_720_566, "30": 20_371_945}]
    assert statement_thread(dumps) == "30"              # counts alone pick the background thread
    assert statement_thread(dumps, {"34"}) == "34"


def _dump(path, *function_lines):
    path.write_text("version: 1\ncreator: callgrind-3.22.0\nevents: Ir\n"
                    + "".join(f"{line}\n1 10\n" for line in function_lines) + "totals: 10\n")
    return path


def test_the_dispatching_thread_is_the_one_naming_dispatch_command_in_every_window(tmp_path):
    """Compressed (`fn=(730) name`) and plain names, as a callee or a function, MySQL's and
    MariaDB's signatures; a thread that dispatched in one window only is not the statement's."""
    mysql, mariadb = "dispatch_command(THD*, COM_DATA const*, enum_server_command)", \
        "dispatch_command(enum_server_command, THD*, char*, unsigned int, bool)"
    windows = [{"34": _dump(tmp_path / "a-34", "fn=(1) do_command(THD*)", f"cfn=(730) {mysql}"),
                "30": _dump(tmp_path / "a-30", "fn=(2) my_strnncollsp_utf8mb3"),
                "12": _dump(tmp_path / "a-12", f"fn={mariadb}")},
               {"34": _dump(tmp_path / "b-34", f"fn=(730) {mysql}"),
                "30": _dump(tmp_path / "b-30", "fn=(2) my_dispatch_command_stats()"),
                "12": _dump(tmp_path / "b-12", "fn=(5) srv_purge_coordinator_thread")}]
    assert dispatching_threads(windows) == {"34"}
    assert dispatching_threads([]) == set()
