"""The typed records the phases write and the report reads, shared by every layer: classify's and apply's
(`phases`) and the run's own (`run`: run.json, each phase's outcome). They import only the shared vocabulary and
the record types of bench and the job engine, never a phase's logic."""
