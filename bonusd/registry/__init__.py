"""The member and device registries a casino imports (records, file formats, text
hygiene) and the public forms of a member's name and card on floor screens (POPIA).
Pure: imports nothing of bonusd but `errors`."""
