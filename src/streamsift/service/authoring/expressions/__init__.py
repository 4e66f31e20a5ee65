"""The expression preview's own interpreter over sqlglot's parse tree (no Python is generated
or run): `interpreter` walks the tree, `functions`, `arrays`, `casts` and `like` are what it
knows, by Spark name, and `values` is what they all share (the package's bottom module)."""
