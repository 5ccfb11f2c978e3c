"""Phase 5, benchmarks: plan the rows (run), time them in workers (worker), the records, peaks."""
