"""The style sheet of the report pages: people-formatted tables (wording.table_html), verdict
cards and notes (cards)."""

CSS = """
body { font-family: system-ui, "Noto Sans CJK SC", sans-serif; margin: 1.5em auto; max-width: 72em; color: #222;
  padding: 0 1em; }
table.people { border-collapse: collapse; max-width: 100%; margin: .5em 0 1em; font-size: 0.9em; }
table.people td, table.people th { border-bottom: 1px solid #ddd; padding: .3em .6em; text-align: left; }
table.people td.long { overflow-wrap: anywhere; }
table.people th { overflow-wrap: normal; vertical-align: bottom; }
table.people td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.people caption { text-align: left; font-weight: 600; }
.cards .card-row { display: flex; flex-wrap: wrap; gap: .8em; margin: .6em 0; }
.card { flex: 1 1 24em; max-width: 100%; border: 1px solid #ccc; border-left: 6px solid #8c8c8c;
  border-radius: 4px; padding: .5em .8em; box-sizing: border-box; }
.card p { margin: .3em 0; }
.card .verdict { font-weight: 700; font-size: 1.05em; margin-right: .6em; }
.card .what { color: #555; }
.card.supported { border-left-color: #1b7837; } .card.supported .verdict { color: #1b7837; }
.card.contradicted { border-left-color: #b2182b; } .card.contradicted .verdict { color: #b2182b; }
.card.inconclusive .verdict { color: #555; }
.card .edge-mark { display: inline-block; font-size: .8em; font-weight: 600; background: #fff3cd;
  border: 1px solid #b08000; color: #7a5a00; border-radius: 3px; padding: 0 .4em; margin-right: .6em; }
.card p.edge { color: #7a5a00; }
.card.not-tested { border-left-color: #d0d0d0; color: #777; }
.note { background: #fff7e0; padding: .4em .8em; border-radius: 4px; }
.small { font-size: .85em; color: #555; }
img, svg { max-width: 100%; height: auto; }
"""
