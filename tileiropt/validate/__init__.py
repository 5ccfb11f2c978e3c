"""Phase 4, validation: plan the cases (run), run them in workers (worker), the records."""
