"""Campaign rehearsal: a whole promotion on a simulated floor, through MQTT into the
daemon, and its report (docs/rehearsal.md)."""
