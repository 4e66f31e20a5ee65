"""The API's OpenAPI document, written without starting a server.

    python -m streamsift.api.openapi_document > ui/openapi.json

The app is built with its default settings (no token: so no bearer scheme), exactly as
/openapi.json describes it. The web UI's TypeScript types are generated from the checked-in
copy (scripts/build-ui.sh; tests/unit/wire/test_wire_types.py fails when the copy is stale).
"""

from __future__ import annotations

import json
import sys
from typing import Any


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of the app with default settings."""
    from streamsift.api.app import create_app

    return create_app().openapi()


def openapi_text() -> str:
    """The document as ui/openapi.json holds it: indented JSON, keys in the app's order."""
    return json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    sys.stdout.write(openapi_text())


if __name__ == "__main__":
    main()
