"""The job engine shared by capture, validate and bench: workers, jobs, resume, progress."""
