"""`tileiropt run`: the phases end to end, the run's record, reuse of unchanged phases, and the program of the job
engine's workers (`job_worker`), which runs the phases' jobs."""
