"""SQL inspection with sqlglot: the statement gate, reading trees, and editing them."""
