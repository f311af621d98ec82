"""The live floor: the telemetry contract and decoder, the floor rules and accounting, the store applying batches exactly once, the active view."""
