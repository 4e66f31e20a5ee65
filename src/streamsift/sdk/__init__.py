"""The Python SDK of `streamsift serve`: `Client` for the native API, typed errors, and
building a pipeline in Python and saving it as YAML.

    from streamsift.sdk import Client, save_yaml
    client = Client("http://127.0.0.1:8080", token="...")
    client.validate(pipeline)  # a streamsift.config.Pipeline, or a dict

Imports nothing of the runtime: only the config models, the error hierarchy and the API's
own request and answer models (streamsift.wire), which `Client` reads answers into.
"""

from streamsift.sdk.client import Client
from streamsift.sdk.documents import pipeline_document, save_yaml
from streamsift.sdk.errors import (
    ApiError,
    BadRequest,
    Conflict,
    NotFound,
    ServiceUnavailable,
    Unauthorized,
    ValidationFailed,
)

__all__ = [
    "ApiError",
    "BadRequest",
    "Client",
    "Conflict",
    "NotFound",
    "ServiceUnavailable",
    "Unauthorized",
    "ValidationFailed",
    "pipeline_document",
    "save_yaml",
]
