"""Results to output: tables, JSON, CSV, comparisons and HTML reports."""
