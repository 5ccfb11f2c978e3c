"""The IR-level compatibility check: kernels lowered to TTIR on any machine, checked against a release."""
