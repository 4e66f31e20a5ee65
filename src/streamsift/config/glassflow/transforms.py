"""GlassFlow filters and stateless transforms (expr-lang) read as our `filter` and `transform`."""

from __future__ import annotations

from typing import Any

from streamsift.config.glassflow.exprlang import ExprLangError, translate
from streamsift.config.glassflow.reader import Reader
from streamsift.config.glassflow.schema import Field, read_field_type


def read_filter(r: Reader, holder: dict[str, Any], path: str, extras: dict[str, Any]) -> None:
    """`holder.expression` (expr-lang, kept when true) as our Spark SQL `filter`."""
    text = r.text(holder, "expression", f"{path}.expression", empty="expression cannot be empty")
    r.origin("filter", f"{path}.expression")
    if text is not None:
        try:
            extras["filter"] = translate(text)
        except ExprLangError as exc:
            r.problem(f"{path}.expression", str(exc))


def read_stateless(
    r: Reader,
    holder: dict[str, Any],
    path: str,
    key: str,
    fields: dict[str, Field],
    extras: dict[str, Any],
) -> None:
    """A stateless transform's `config.<key>` list (v3 `transforms`, v2 `transform`)."""
    config = r.obj(holder, "config", f"{path}.config", required=True) or {}
    entries = r.array(config, key, f"{path}.config.{key}", required=True)
    read_stateless_entries(r, entries or [], f"{path}.config.{key}", fields, extras)


def read_stateless_entries(
    r: Reader, entries: list[Any], path: str, fields: dict[str, Field], extras: dict[str, Any]
) -> None:
    """GlassFlow `{expression, output_name, output_type}` entries as our `transform`.

    Each computed field joins `fields`, so the sink mapping may use it. An output named like
    a schema field replaces it, as GlassFlow's stateless output replaces the record: ours is
    computed as `<name>_out` (a computed field may not take a field's name here) and the
    sink mapping's `<name>` reads it.
    """
    out = extras.setdefault("transform", [])
    replaced = []
    for _, epath, entry in r.objects(entries, path, "{expression, output_name, output_type}"):
        text = r.text(entry, "expression", f"{epath}.expression", empty="expression is empty")
        name = r.text(entry, "output_name", f"{epath}.output_name", empty="name is empty")
        ftype = read_field_type(r, entry.get("output_type"), f"{epath}.output_type")
        if text is None or name is None or ftype is None:
            continue
        try:
            sql = translate(text)
        except ExprLangError as exc:
            r.problem(f"{epath}.expression", str(exc))
            continue
        given = name
        if name in fields:
            if sql == f"`{name}`":
                continue  # a field passed through unchanged: already there
            name = f"{name}_out"
            if name in fields:
                r.problem(
                    f"{epath}.output_name",
                    f"{given!r} is also a schema field, and so is {name!r}: rename the output",
                )
                continue
            replaced.append(given)
        for ours, theirs in (("", ""), (".name", ".output_name"), (".type", ".output_type")):
            r.origin(f"transform[{len(out)}]{ours}", f"{epath}{theirs}")
        r.origin(f"transform[{len(out)}].expression", f"{epath}.expression")
        out.append({"name": name, "expression": sql, "type": ftype.value})
        fields[name] = fields[given] = Field(name, ftype, epath)
    if replaced:
        r.notes.append(
            "stateless outputs named like schema fields ("
            + ", ".join(replaced)
            + ") are computed as <name>_out, and the sink mapping's <name> reads them"
        )
    r.notes.append(
        "GlassFlow's stateless output replaces the record; here computed fields are added "
        "to the schema fields, and the mapping may use both"
    )
