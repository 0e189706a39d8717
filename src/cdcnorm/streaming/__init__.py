"""Continuous mode: input files as a stream of paths, each micro-batch committed once through the lake's protocol."""
