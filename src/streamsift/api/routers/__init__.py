"""One router per resource of the native API (`/api/v1/...`)."""
