"""The project file and its model: load, validate (errors with the key path), defaults."""
