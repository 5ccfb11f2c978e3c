"""The types every phase shares, below every phase: the run's context, a phase's outcome and the pure policy over
outcomes, the artifact store, the records of classify and apply, a job's cost. It imports nothing of the tool but
the root's vocabulary (`errors`, `output`, `schema`, `phases`); the types it names from above are for the type
checker only."""
