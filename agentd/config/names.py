"""What a unit may be named (SPEC 1): its file stem, no paths."""

UNIT_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
