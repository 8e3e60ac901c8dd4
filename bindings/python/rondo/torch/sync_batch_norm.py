"""SyncBatchNorm: batch normalization whose statistics are those of the
whole batch across the process set, as Horovod's hvd.SyncBatchNorm, on CPU
and CUDA tensors alike (Horovod's needs CUDA).

In training each rank sums its part of the batch (count, the sums and the
sums of squares per channel, in float64) and one all-reduce adds them up;
backward all-reduces the two per-channel sums the input gradient needs.
The weight and bias gradients stay local, as in torch's and Horovod's
SyncBatchNorm: DistributedOptimizer averages them with the others. In
evaluation, or on one rank, it is plain batch normalization.
"""
import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from . import ops
from .process_sets import comm_of, global_process_set

__all__ = ["SyncBatchNorm"]


def _dims(x):
    return [0] + list(range(2, x.dim()))


def _per_channel(v, x):
    return v.reshape([1, -1] + [1] * (x.dim() - 2))


class _SyncBatchNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, process_set):
        dims = _dims(x)
        wide = x.detach().to(torch.float64)
        local = torch.cat([torch.tensor([x.numel() // x.size(1)], dtype=torch.float64),
                           wide.sum(dims), (wide * wide).sum(dims)])
        total = ops.allreduce(local, op=ops.Sum, process_set=process_set)
        c = x.size(1)
        n, mean = total[0], total[1:1 + c] / total[0]
        var = (total[1 + c:] / n - mean * mean).clamp_min(0)
        if running_mean is not None:
            with torch.no_grad():
                unbiased = var * n / (n - 1) if n > 1 else var
                running_mean.mul_(1 - momentum).add_(momentum * mean.to(running_mean.dtype))
                running_var.mul_(1 - momentum).add_(momentum * unbiased.to(running_var.dtype))
        invstd = (var + eps).rsqrt()
        xhat = (wide - _per_channel(mean, x)) * _per_channel(invstd, x)
        y = xhat
        if weight is not None:
            y = y * _per_channel(weight.detach().to(torch.float64), x)
        if bias is not None:
            y = y + _per_channel(bias.detach().to(torch.float64), x)
        ctx.save_for_backward(x, weight, mean, invstd)
        ctx.n, ctx.process_set = n, process_set
        ctx.has_bias = bias is not None
        return y.to(x.dtype)

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, invstd = ctx.saved_tensors
        dims = _dims(x)
        dy64 = dy.to(torch.float64)
        xmu = x.to(torch.float64) - _per_channel(mean, x)
        local = torch.cat([dy64.sum(dims), (dy64 * xmu).sum(dims)])
        grad_weight = grad_bias = None
        if weight is not None and ctx.needs_input_grad[1]:
            grad_weight = (dy64 * xmu * _per_channel(invstd, x)).sum(dims).to(weight.dtype)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = dy64.sum(dims).to(dy.dtype)
        dx = None
        if ctx.needs_input_grad[0]:
            total = ops.allreduce(local, op=ops.Sum, process_set=ctx.process_set)
            c = x.size(1)
            sum_dy, sum_dy_xmu = total[:c] / ctx.n, total[c:] / ctx.n
            scale = invstd if weight is None else invstd * weight.detach().to(torch.float64)
            dx = (dy64 - _per_channel(sum_dy, x) -
                  xmu * _per_channel(invstd * invstd * sum_dy_xmu, x)) * _per_channel(scale, x)
            dx = dx.to(x.dtype)
        return dx, grad_weight, grad_bias, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over the whole batch of the process set's ranks
    (training), plain batch normalization otherwise. Arguments as torch's
    BatchNorm, plus process_set."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_set=global_process_set):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("expected at least 2D input (got %dD input)" % input.dim())

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        batch_stats = self.training or not self.track_running_stats
        if not batch_stats or comm_of(self.process_set).size == 1:
            return F.batch_norm(input, self.running_mean if not batch_stats or
                                self.track_running_stats else None,
                                self.running_var if not batch_stats or
                                self.track_running_stats else None,
                                self.weight, self.bias, batch_stats, factor, self.eps)
        return _SyncBatchNormFunction.apply(
            input, self.weight, self.bias,
            self.running_mean if self.track_running_stats else None,
            self.running_var if self.track_running_stats else None,
            self.eps, factor, self.process_set)
