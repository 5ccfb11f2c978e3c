"""tileiropt: prepare existing Triton kernels for NVIDIA's CUDA Tile IR backend."""

__version__ = "0.1.0"
