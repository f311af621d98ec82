"""The daemon as a whole: scheduler, retention, crashes and faults of Redis, the broker and the push."""
