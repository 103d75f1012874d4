"""claimlab: re-test published MySQL performance claims with repeated runs and honest statistics."""

__version__ = "0.1.0"
