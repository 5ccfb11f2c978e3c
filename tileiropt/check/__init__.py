"""Phase 1, check: what is installed and active, the machine's facts."""
