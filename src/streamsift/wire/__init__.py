"""The bodies of the native API's requests and answers: one shape per wire type.

The API (api/routers) answers with these models and its OpenAPI document is made from them;
the SDK (sdk/) reads the answers into the same classes; the web UI's TypeScript types are
generated from that OpenAPI document (ui/openapi.json -> ui/src/api-schema.ts). So a field
is written once, here. This package imports only pydantic, the config models and the error
hierarchy (a contract in pyproject.toml), so both faces may import it.

    pipelines.py     a pipeline's record, status, history and table rows
    dead_letters.py  the DLQ routes: pages, stats, purge and replay
    helpers.py       the helper routes: connection probes, sampling, schema inference,
                     expressions and document validation
    error_body.py    the one error answer
"""
