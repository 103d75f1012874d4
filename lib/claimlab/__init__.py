"""claimlab: re-test published MySQL performance claims with repeated runs and honest statistics."""

# mysql-connector-python's C extension needs static TLS space for libstdc++; once numpy/scipy
# have taken it (as in a Jupyter kernel) it silently falls back to pure Python, which changes the
# client's cost per statement. Loading it first keeps the CLI and the notebooks on the same
# implementation; provenance records which one ran.
try:
    import _mysql_connector  # noqa: F401
except ImportError:
    pass

__version__ = "0.1.0"
