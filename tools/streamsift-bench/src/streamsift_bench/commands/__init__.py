"""The `bench`, `chaos` and `loadgen` subcommands of `streamsift` (entry points
`streamsift.commands`: each module's `register(subparsers)`)."""
