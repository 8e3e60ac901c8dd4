"""Gradient compression for rondo.torch, as Horovod's Compression: none, or
fp16 on the wire (floating tensors other than float16 travel as float16 and
come back in their dtype; others are left alone)."""
import torch

__all__ = ["Compression"]


class NoneCompressor:
    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor:
    @staticmethod
    def compress(tensor):
        if isinstance(tensor, torch.Tensor) and tensor.dtype.is_floating_point and \
                tensor.dtype != torch.float16:
            return tensor.to(torch.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tensor.to(ctx)


class Compression:
    """Horovod's gradient compression: Compression.none, Compression.fp16."""
    none = NoneCompressor
    fp16 = FP16Compressor
