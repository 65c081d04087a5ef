"""Loading and checking zerolayer results files (docs/results_schema.md)."""
from .schema import (
    INDEX_COLUMNS,
    ROOT_ATTRS,
    SCHEMA_VERSION,
    SchemaError,
    check_results_file,
    load_curve,
    load_index,
    load_table,
)

__all__ = [
    "INDEX_COLUMNS",
    "ROOT_ATTRS",
    "SCHEMA_VERSION",
    "SchemaError",
    "check_results_file",
    "load_curve",
    "load_index",
    "load_table",
]
