"""`streamsift serve`: the HTTP face of the pipeline service (FastAPI).

`create_app(settings)` builds the app; routers hold one resource each (`routers/`), errors of
the hierarchy become HTTP answers in one place (`errors.py`).
"""
