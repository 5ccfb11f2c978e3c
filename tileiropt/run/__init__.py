"""`tileiropt run`: the phases end to end, the run's record, reuse of unchanged phases."""
