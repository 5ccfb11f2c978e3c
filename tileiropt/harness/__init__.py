"""Running user code inside a worker: importing kernel files, inputs, references, stand-ins."""
