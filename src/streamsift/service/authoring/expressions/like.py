"""SQL LIKE for the expression preview, without regular expressions.

A LIKE pattern and the text it is matched against both come from a request, so the match must
not backtrack: `%a%a%a...b` on a long text would take a backtracking matcher time exponential
in the pattern. The pattern splits at `%` into pieces of fixed length (`_` is one character):
the first piece must start the text, the last must end it, and the others are found leftmost,
in order, each after the previous. For fixed-length pieces the leftmost choice is never worse
than any other, so this is exact, and the work is linear in the text for each piece. Each
attempt is counted through `spend`, so the caller's budget stops a costly match.
"""

from __future__ import annotations

from collections.abc import Callable


class LikePatternError(ValueError):
    """A pattern Spark refuses: the escape character before something else than %, _ or itself."""


def like(text: str, pattern: str, escape: str, spend: Callable[[int], None]) -> bool:
    """SQL LIKE without regular expressions: `%` any run, `_` one character, `escape` makes
    the next `%`, `_` or itself literal. The pattern splits at `%` into pieces of fixed length;
    the first piece must start the text, the last end it, and the others are matched leftmost
    in order (exact for fixed-length pieces). Each attempt is counted against the budget."""
    pieces: list[list[str | None]] = [[]]  # None: `_`
    chars = iter(pattern)
    for ch in chars:
        if ch == escape:
            nxt = next(chars, None)
            if nxt not in ("%", "_", escape):
                raise LikePatternError(
                    f"the LIKE pattern has the escape character {escape!r} before "
                    "something else than %, _ or itself"
                )
            pieces[-1].append(nxt)
        elif ch == "%":
            pieces.append([])
        else:
            pieces[-1].append(None if ch == "_" else ch)
    spend(len(pattern) // 64)
    first, last = pieces[0], pieces[-1]
    if len(pieces) == 1:
        return len(text) == len(first) and _fits(text, 0, first, spend)
    if len(text) < len(first) + len(last):
        return False
    if not _fits(text, 0, first, spend) or not _fits(text, len(text) - len(last), last, spend):
        return False
    start, end = len(first), len(text) - len(last)
    for piece in pieces[1:-1]:
        found = _find(text, piece, start, end, spend)
        if found < 0:
            return False
        start = found + len(piece)
    return True


def _fits(text: str, at: int, piece: list[str | None], spend: Callable[[int], None]) -> bool:
    spend(1 + len(piece) // 16)
    return all(c is None or text[at + i] == c for i, c in enumerate(piece))


def _find(
    text: str, piece: list[str | None], start: int, end: int, spend: Callable[[int], None]
) -> int:
    """The leftmost position in text[start:end] where `piece` fits, or -1."""
    if not piece:
        return start
    literal = [(i, c) for i, c in enumerate(piece) if c is not None]
    if not literal:
        return start if end - start >= len(piece) else -1
    # Anchor on the longest literal run; str.find is linear in the text.
    runs: list[tuple[int, str]] = []
    for i, c in literal:
        if runs and runs[-1][0] + len(runs[-1][1]) == i:
            runs[-1] = (runs[-1][0], runs[-1][1] + c)  # type: ignore[operator]
        else:
            runs.append((i, c))  # type: ignore[arg-type]
    offset, anchor = max(runs, key=lambda r: len(r[1]))
    at = start + offset
    while True:
        spend(1 + len(piece) // 16)
        hit = text.find(anchor, at, end - (len(piece) - offset - len(anchor)))
        if hit < 0:
            return -1
        if _fits(text, hit - offset, piece, spend):
            return hit - offset
        at = hit + 1
