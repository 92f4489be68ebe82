"""The state files' formats: parsed, checked and edited as values (no bootstrap, no verbs)."""
