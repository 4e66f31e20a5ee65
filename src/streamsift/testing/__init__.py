"""Test helpers shipped with the package: the bundled Kafka broker and data generators.

Used by the test suite, `streamsift demo` and the benchmark; product code below the
faces (cli, api) never imports this package.
"""
