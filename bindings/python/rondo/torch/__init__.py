"""rondo.torch: the common horovod.torch surface on rondo.

    import rondo.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)

Tensors go to rondo by pointer (no copy): CPU tensors through rondo's host
algorithms; CUDA tensors need a rondo built with CUDA (rondo_cuda_built()),
otherwise they raise TypeError. Asynchronous calls go through rondo's fusion
engine, matched across ranks by name, as Horovod's are. docs/python.md has
the migration table: what maps one to one, what differs, what is missing.
"""
import torch

import rondo as _r
from rondo import RondoError, _lib

__all__ = [
    "init", "shutdown", "is_initialized", "size", "rank", "local_rank", "local_size",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_", "grouped_allreduce",
    "synchronize", "poll", "allgather", "broadcast", "broadcast_", "alltoall", "join",
    "barrier", "broadcast_parameters", "broadcast_optimizer_state", "broadcast_object",
    "allgather_object", "reducescatter", "DistributedOptimizer", "Compression", "Average",
    "Sum", "Min", "Max", "Product", "RondoError",
]

# Horovod's op constants (values are rondo's ops).
Sum, Average, Min, Max, Product = "sum", "average", "min", "max", "product"

init = _r.init
shutdown = _r.shutdown
is_initialized = _r.is_initialized
size = _r.size
rank = _r.rank
local_rank = _r.local_rank
local_size = _r.local_size
barrier = _r.barrier
broadcast_object = _r.broadcast_object
allgather_object = _r.allgather_object


def mpi_enabled():
    return True


def mpi_threads_supported():
    return True


def gloo_enabled():
    return False


def nccl_built():
    return bool(_lib.lib.rondo_nccl_built())


def cuda_built():
    return bool(_lib.lib.rondo_cuda_built())


_TORCH_DTYPES = {torch.int8: 0, torch.uint8: 1, torch.int32: 2, torch.int64: 3,
                 torch.float16: 4, torch.bfloat16: 5, torch.float32: 6, torch.float64: 7}


def _dtype(t):
    if not isinstance(t, torch.Tensor):
        raise TypeError("rondo.torch: expected a torch.Tensor, not %s" % type(t).__name__)
    code = _TORCH_DTYPES.get(t.dtype)
    if code is None:
        raise TypeError("rondo.torch: dtype %s is not supported (int8, uint8, int32, int64, "
                        "float16, bfloat16, float32, float64)" % t.dtype)
    if t.device.type == "cuda" and not cuda_built():
        raise TypeError("rondo.torch: a CUDA tensor, but this rondo was built without CUDA "
                        "(configure --with-cuda); move it to the CPU first")
    if t.device.type not in ("cpu", "cuda"):
        raise TypeError("rondo.torch: tensors on %s are not supported" % t.device.type)
    if t.is_sparse or not t.is_contiguous():
        raise ValueError("rondo.torch: the tensor must be dense and contiguous "
                         "(tensor.contiguous())")
    return code


def _op(op, average):
    if op is not None and average is not None:
        raise ValueError("rondo.torch: give op or average, not both")
    if average is not None:
        return Average if average else Sum
    return Average if op is None else op


# ---- compression ----------------------------------------------------------------------

class _NoneCompressor:
    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class _FP16Compressor:
    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating_point and tensor.dtype != torch.float16:
            return tensor.to(torch.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tensor.to(ctx)


class Compression:
    """Horovod's gradient compression: none, or fp16 on the wire."""
    none = _NoneCompressor
    fp16 = _FP16Compressor


# ---- handles ----------------------------------------------------------------------------

class _TorchHandle:
    __slots__ = ("handle", "output", "ctx", "compression", "target")

    def __init__(self, handle, output, ctx=None, compression=_NoneCompressor, target=None):
        self.handle = handle
        self.output = output
        self.ctx = ctx
        self.compression = compression
        self.target = target  # in place with compression: copy the result back here


def _submit(tensor, output, name, op, prescale, postscale, group=None, group_size=0):
    if tensor.is_cuda:
        # rondo's GPU work runs on its own stream: what torch queued to make
        # this tensor must be done first. (Scales on CUDA tensors are
        # refused by the library: they need a kernel, docs/gpu.md.)
        torch.cuda.current_stream(tensor.device).synchronize()
    return _r.world()._submit_allreduce(tensor.data_ptr(), output.data_ptr(), tensor.numel(),
                                        _dtype(tensor), op, name, None, prescale, postscale,
                                        (tensor, output), group, group_size)


def _start(tensor, name, op, prescale, postscale, compression, group=None, group_size=0):
    """An all-reduce of tensor (compressed) into a new tensor."""
    wire, ctx = compression.compress(tensor.detach())
    wire = wire.contiguous()
    out = torch.empty_like(wire)
    h = _submit(wire, out, name, op, prescale, postscale, group, group_size)
    return _TorchHandle(h, out, ctx, compression)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, compression=Compression.none):
    """Starts an all-reduce into a new tensor; synchronize(handle) returns it.
    The default op is Average, as in Horovod."""
    return _start(tensor, name, _op(op, average), prescale_factor, postscale_factor,
                  compression)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, compression=Compression.none):
    """Starts an in-place all-reduce of tensor; synchronize(handle) returns it."""
    op = _op(op, average)
    _dtype(tensor)
    data = tensor.detach()
    wire, ctx = compression.compress(data)
    if ctx is None:
        return _TorchHandle(_submit(data, data, name, op, prescale_factor, postscale_factor),
                            tensor)
    h = _submit(wire, wire, name, op, prescale_factor, postscale_factor)
    return _TorchHandle(h, wire, ctx, compression, target=tensor)


def poll(handle):
    """Whether the request completed (synchronize will not wait)."""
    return handle.handle.done()


def synchronize(handle):
    """Waits for the request; returns its output tensor."""
    handle.handle.wait()
    out = handle.compression.decompress(handle.output, handle.ctx)
    if handle.target is not None:
        with torch.no_grad():
            handle.target.copy_(out)
        return handle.target
    return out


class _AllreduceFunction(torch.autograd.Function):
    """allreduce as an autograd op: the gradient of a sum (or average) over
    ranks is the same reduction of the gradients, as in Horovod."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale, postscale, compression):
        ctx.args = (op, prescale, postscale)
        return synchronize(allreduce_async(tensor, None, name, op, prescale, postscale,
                                           compression))

    @staticmethod
    def backward(ctx, grad):
        op, prescale, postscale = ctx.args
        if op not in (Sum, Average):
            raise RuntimeError("rondo.torch: the gradient of allreduce is defined for Sum and "
                               "Average only, not %s" % op)
        g = synchronize(allreduce_async(grad.contiguous(), None, None, op, prescale, postscale))
        return g, None, None, None, None, None


def allreduce(tensor, average=None, name=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0, compression=Compression.none):
    """The reduction of tensor over the ranks, as a new tensor (default: the
    average). Through the engine, like Horovod's: a rank that joined serves
    it with zeros. Differentiable for Sum and Average: backward all-reduces
    the gradient the same way (every rank must then call backward)."""
    op = _op(op, average)
    if tensor.requires_grad and torch.is_grad_enabled():
        return _AllreduceFunction.apply(tensor, name, op, prescale_factor, postscale_factor,
                                        compression)
    return synchronize(allreduce_async(tensor, None, name, op, prescale_factor,
                                       postscale_factor, compression))


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, compression=Compression.none):
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                        postscale_factor, compression))


def grouped_allreduce(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, compression=Compression.none):
    """All-reduces the tensors as one fused group; a list of new tensors."""
    op = _op(op, average)
    base = name or _r.world()._auto_name("grouped_allreduce")
    handles = [_start(t, "%s.%d" % (base, i), op, prescale_factor, postscale_factor, compression,
                      group=base, group_size=len(tensors)) for i, t in enumerate(tensors)]
    return [synchronize(h) for h in handles]


# ---- broadcast, allgather, alltoall -------------------------------------------------------

def _numpy_view(t):
    """A NumPy array over a CPU tensor's memory. bfloat16 is viewed as
    float16: the calls that use this view move bytes, never add them."""
    if t.device.type != "cpu":
        raise TypeError("rondo.torch: only CPU tensors are supported here, not %s" % t.device)
    if t.dtype == torch.bfloat16:
        return t.view(torch.float16).numpy()
    return t.numpy()


def _from_numpy(a, like):
    out = torch.from_numpy(a)
    return out.view(torch.bfloat16) if like.dtype == torch.bfloat16 else out


def broadcast_(tensor, root_rank, name=None):
    """In place: tensor becomes root_rank's on every rank; returns it."""
    _dtype(tensor)
    with torch.no_grad():
        _r.world().broadcast_(_numpy_view(tensor.detach()), root_rank)
    return tensor


def broadcast(tensor, root_rank, name=None):
    """root_rank's tensor, as a new tensor on every rank."""
    return broadcast_(tensor.detach().clone().contiguous(), root_rank, name)


def allgather(tensor, name=None):
    """Every rank's tensor concatenated along dimension 0 (which may differ
    across ranks)."""
    _dtype(tensor)
    t = tensor.detach().contiguous()
    return _from_numpy(_r.world().allgather(_numpy_view(t)), t)


def alltoall(tensor, splits=None, name=None):
    """Block i of dimension 0 goes to rank i. Only equal blocks: splits, if
    given, must all be equal (Horovod's uneven splits are not supported)."""
    _dtype(tensor)
    if splits is not None:
        s = [int(x) for x in (splits.tolist() if isinstance(splits, torch.Tensor) else splits)]
        if len(s) != size() or len(set(s)) != 1 or sum(s) != tensor.shape[0]:
            raise ValueError("rondo.torch.alltoall: only equal splits are supported, got %s" % s)
    t = tensor.detach().contiguous()
    return _from_numpy(_r.world().alltoall(_numpy_view(t)), t)


def reducescatter(tensor, op=Average, name=None):
    """Block rank of the reduction (dimension 0 cut into size equal
    blocks). The default op is Average, as in Horovod."""
    _dtype(tensor)
    if tensor.dtype == torch.bfloat16:
        raise TypeError("rondo.torch.reducescatter: bfloat16 is not supported here; use "
                        "float32 or allreduce")
    t = tensor.detach().contiguous()
    return torch.from_numpy(_r.world().reduce_scatter(t.numpy(), op))


def join(device=-1):
    """This rank has no more batches: it serves the others' all-reduces with
    zeros until every rank has joined. Returns the rank that joined last.
    device is accepted for Horovod's signature."""
    return _r.join()


# ---- model and optimizer state ----------------------------------------------------------

def broadcast_parameters(params, root_rank=0):
    """Broadcasts a state_dict, or an iterable of (name, tensor), in place
    from root_rank. Every rank must pass the same names."""
    if isinstance(params, dict):
        items = sorted(params.items())
    else:
        items = list(params)
    for _, p in items:
        if isinstance(p, torch.Tensor):
            broadcast_(p.data if isinstance(p, torch.nn.Parameter) else p, root_rank)


def broadcast_optimizer_state(optimizer, root_rank=0):
    """Gives every rank root_rank's optimizer state (hyperparameters and
    per-parameter buffers such as momentum)."""
    state = broadcast_object(optimizer.state_dict() if rank() == root_rank else None, root_rank)
    if rank() != root_rank:
        optimizer.load_state_dict(state)


# ---- DistributedOptimizer -----------------------------------------------------------------

class _DistributedOptimizer(torch.optim.Optimizer):
    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        self._op = op
        self._prescale = 1.0 / gradient_predivide_factor
        self._postscale = gradient_predivide_factor
        if backward_passes_per_step < 1:
            raise ValueError("backward_passes_per_step must be >= 1")
        self._passes_per_step = backward_passes_per_step
        all_params = [p for g in self.param_groups for p in g["params"]]
        if named_parameters is not None:
            named = list(named_parameters)
            names = {id(p): n for n, p in named}
            if len({n for n, _ in named}) != len(named):
                raise ValueError("named_parameters has duplicate names")
            missing = [p for p in all_params if id(p) not in names]
            if missing:
                raise ValueError("named_parameters does not name %d of the optimizer's "
                                 "parameters" % len(missing))
        else:
            names = {id(p): "noname.%d" % i for i, p in enumerate(all_params)}
        self._names = {id(p): "allreduce." + names[id(p)] for p in all_params}
        self._handles = {}
        self._passes_left = {}
        self._grad_accs = []
        self._synchronized = False
        self._should_synchronize = True
        if size() > 1:
            self._register_hooks()

    def _register_hooks(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    self._passes_left[id(p)] = self._passes_per_step
                    acc = p.expand_as(p).grad_fn.next_functions[0][0]
                    acc.register_hook(self._make_hook(p))
                    self._grad_accs.append(acc)

    def _make_hook(self, p):
        def hook(*_):
            if id(p) in self._handles:
                raise AssertionError(
                    "gradients were computed more than backward_passes_per_step times before "
                    "optimizer.step() or synchronize(); raise backward_passes_per_step")
            self._passes_left[id(p)] -= 1
            if self._passes_left[id(p)] == 0:
                self._handles[id(p)] = (p, self._submit(p))
        return hook

    def _submit(self, p):
        return allreduce_async_(p.grad, name=self._names[id(p)], op=self._op,
                                prescale_factor=self._prescale,
                                postscale_factor=self._postscale,
                                compression=self._compression)

    def synchronize(self):
        """Waits for every gradient's all-reduce (and starts those whose hook
        did not fire, such as parameters unused in this step)."""
        if size() > 1:
            for group in self.param_groups:
                for p in group["params"]:
                    if p.requires_grad and id(p) not in self._handles:
                        if p.grad is None:
                            p.grad = torch.zeros_like(p)
                        self._handles[id(p)] = (p, self._submit(p))
            for p, h in self._handles.values():
                synchronize(h)
            self._handles.clear()
            for k in self._passes_left:
                self._passes_left[k] = self._passes_per_step
        self._synchronized = True

    def skip_synchronize(self):
        """with optimizer.skip_synchronize(): optimizer.step() after an
        explicit synchronize(), as in Horovod."""
        opt = self

        class _Skip:
            def __enter__(self):
                opt._should_synchronize = False

            def __exit__(self, *exc):
                opt._should_synchronize = True
        return _Skip()

    def step(self, closure=None):
        if self._should_synchronize:
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize()")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0):
    """Wraps a torch optimizer: each gradient is all-reduced (averaged by
    default) as soon as autograd has accumulated it, overlapping the rest of
    backward; step() waits for them, then steps. With
    backward_passes_per_step=N the local gradients of N backward passes are
    summed first (scale the loss by 1/N for a mean)."""
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    wrapped = cls(optimizer.param_groups, named_parameters, compression,
                  backward_passes_per_step, op, gradient_predivide_factor)
    if optimizer.state:
        wrapped.load_state_dict(optimizer.state_dict())
    return wrapped
