"""Member and device records and files, and the public forms of names and cards."""
