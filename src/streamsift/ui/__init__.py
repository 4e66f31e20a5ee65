"""The web UI's built files (static/, made from ui/ by `make setup`; not in git).

Nothing here is Python the service runs: api/routers/ui.py serves static/ at `/`. The UI
talks to the native API over HTTP only.
"""
