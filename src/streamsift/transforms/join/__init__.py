"""The joins of two or more sources in one streaming query: the plan of the steps and
`mode: interval` (plan.py), `mode: latest` and `mode: table` through Spark's
`transformWithState` (latest.py; keys in buckets: latest_buckets.py), and their rules as pure
functions of a key's state (latest_rule.py, table_rule.py)."""
