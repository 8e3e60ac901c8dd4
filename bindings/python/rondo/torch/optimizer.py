"""DistributedOptimizer: Horovod's gradient averaging for torch optimizers,
on rondo's engine.

Each gradient is submitted (named after its parameter) as soon as autograd
has accumulated it, so its all-reduce overlaps the rest of backward;
step() waits for all of them, then steps. Options as in Horovod:
backward_passes_per_step (local accumulation), op and
gradient_predivide_factor, compression, groups (grouped all-reduces),
sparse_as_dense (sparse gradients: all-reduced dense, or allgathered as
indices and values), process_set. op=Adasum wraps the optimizer as
Horovod's delta optimizer: each step's update is combined with Adasum
(any rank count here; Horovod needs a power of two).
"""
import warnings
from contextlib import contextmanager

import torch

from . import ops
from .compression import Compression
from .functions import allgather_object, broadcast_object
from .ops import Adasum, Average
from .process_sets import global_process_set

__all__ = ["DistributedOptimizer"]


def _names(optimizer, named_parameters):
    """{parameter: name}, checked as Horovod checks it (ValueError)."""
    if named_parameters is not None:
        named = list(named_parameters)
    else:
        named = [("allreduce.noname.%d.%d" % (i, j), p)
                 for i, group in enumerate(optimizer.param_groups)
                 for j, p in enumerate(group["params"])]
    if any(not isinstance(x, tuple) or len(x) != 2 for x in named):
        raise ValueError("named_parameters should be a sequence of (name, parameter) tuples, "
                         "usually model.named_parameters()")
    seen, dups = set(), set()
    for name, _ in named:
        (dups if name in seen else seen).add(name)
    if dups:
        raise ValueError("parameter names in named_parameters must be unique; these repeat: %s"
                         % ", ".join(sorted(map(str, dups))))
    given = {id(p) for _, p in named}
    unnamed = [p for g in optimizer.param_groups for p in g["params"] if id(p) not in given]
    if unnamed:
        raise ValueError("named_parameters was given but does not name %d of the optimizer's "
                         "parameters" % len(unnamed))
    return {p: name for name, p in sorted(named, key=lambda x: x[0])}


def _agree_parameters(opt):
    """Every rank of the set must all-reduce the same gradients (names,
    shapes, dtypes): else one rank's step() would finish and another's wait
    for a gradient nobody else sends. One digest is gathered, the lists
    only when they differ; a difference raises ValueError on every rank,
    naming the ranks, their counts and the first name that differs."""
    import hashlib
    mine = sorted("%s %s %s" % (opt._parameter_names[p], tuple(p.shape),
                                str(p.dtype).replace("torch.", ""))
                  for g in opt.param_groups for p in g["params"] if p.requires_grad)
    digest = hashlib.sha1("\n".join(mine).encode()).hexdigest()
    ps = opt.process_set
    digests = allgather_object(digest, process_set=ps)
    if len(set(digests)) == 1:
        return
    lists = allgather_object(mine, process_set=ps)
    ranks = ps.ranks if ps is not global_process_set and ps.ranks else range(len(lists))
    other = next(i for i, d in enumerate(digests) if d != digests[0])
    a, b = lists[0], lists[other]
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    a_at = a[first] if first < len(a) else "nothing"
    b_at = b[first] if first < len(b) else "nothing"
    raise ValueError("DistributedOptimizer: the ranks would all-reduce different parameters: "
                     "rank %d has %d parameters, rank %d has %d; the first difference (in name "
                     "order): rank %d has %s, rank %d has %s"
                     % (ranks[other], len(b), ranks[0], len(a), ranks[0], a_at, ranks[other],
                        b_at))


def _split(items, n):
    """items in n consecutive parts as even as possible (the first longer)."""
    size, extra = divmod(len(items), n)
    out, at = [], 0
    for i in range(n):
        k = size + (i < extra)
        if k:
            out.append(items[at:at + k])
        at += k
    return out


def _setup(opt, named_parameters, compression, backward_passes_per_step, process_set):
    """What both optimizers keep: names, compression, the local passes,
    the handles and hooks."""
    opt._parameter_names = _names(opt, named_parameters)
    opt._compression = compression
    opt.backward_passes_per_step = backward_passes_per_step
    opt._allreduce_delay = {p: backward_passes_per_step for p in opt._parameter_names}
    opt.process_set = process_set
    opt._handles = {}
    opt._grad_accs = []
    opt._requires_update = set()


def _hook_on(opt, p):
    """Calls opt's hook for p each time autograd accumulated p's gradient."""
    acc = p.expand_as(p).grad_fn.next_functions[0][0]
    acc.register_hook(opt._make_hook(p))
    opt._grad_accs.append(acc)


def _count_pass(opt, p):
    """A hook's first step: one more backward pass of p, at most
    backward_passes_per_step before the all-reduce."""
    if p in opt._handles and opt._handles[p][0] is not None and opt._allreduce_delay[p] <= 0:
        raise AssertionError("gradients were computed more than backward_passes_per_step "
                             "times before optimizer.step() or synchronize(); raise "
                             "backward_passes_per_step to accumulate them locally")
    opt._allreduce_delay[p] -= 1


def set_backward_passes_per_step(self, passes):
    """Both optimizers' method: local passes before each all-reduce."""
    self.backward_passes_per_step = passes
    for p in self._allreduce_delay:
        self._allreduce_delay[p] = passes


class _DistributedOptimizer(torch.optim.Optimizer):
    """Methods of the optimizer class DistributedOptimizer makes (a subclass
    of the wrapped optimizer's class)."""

    _rondo_distributed = True

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, groups, sparse_as_dense, process_set):
        super(self.__class__, self).__init__(params)
        _setup(self, named_parameters, compression, backward_passes_per_step, process_set)
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self._synchronized = False
        self._should_synchronize = True
        if groups is not None and not (isinstance(groups, list) or
                                       (isinstance(groups, int) and groups > 0)):
            raise ValueError("groups must be a positive int or a list of lists of tensors")
        if isinstance(groups, list):
            seen = set()
            for group in groups:
                for p in group:
                    if not isinstance(p, torch.Tensor):
                        raise ValueError("groups must consist of torch.Tensor")
                    if id(p) in seen:
                        raise ValueError("a parameter can appear in one group only")
                    seen.add(id(p))
        self._groups = groups
        self._p_to_group = {}
        self._group_counts = {}
        if self.process_set.included() and ops.comm_of(process_set).size > 1:
            _agree_parameters(self)
            self._register_hooks()

    def load_state_dict(self, *args, **kwargs):
        self._handles = {}
        self._synchronized = False
        self._should_synchronize = True
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        super(self.__class__, self).load_state_dict(*args, **kwargs)

    set_backward_passes_per_step = set_backward_passes_per_step

    def _register_hooks(self):
        if self._groups is not None:
            self._make_groups()
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    self._requires_update.add(p)
                    _hook_on(self, p)

    def _make_groups(self):
        """Groups in one order on every rank: rank 0's order of the names."""
        wanted = [p for g in self.param_groups for p in g["params"] if p.requires_grad]
        order = broadcast_object([self._parameter_names[p] for p in wanted], root_rank=0,
                                 process_set=self.process_set)
        rank_of = {name: i for i, name in enumerate(order)}
        wanted.sort(key=lambda p: rank_of.get(self._parameter_names[p], len(order)))
        if isinstance(self._groups, list):
            ids = {id(p) for p in wanted}
            groups = [[p for p in g if id(p) in ids] for g in self._groups]
            grouped = {id(p) for g in groups for p in g}
            groups = [g for g in groups if g] + [[p] for p in wanted if id(p) not in grouped]
        else:
            groups = _split(wanted, self._groups)
        for g in groups:
            g = tuple(g)
            for p in g:
                self._p_to_group[p] = g
            self._group_counts[g] = 0

    def _scales(self):
        if self.op == Average:  # Average's 1/size is rondo's; predivide splits the rest
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _allreduce_grad_async(self, p):
        if p.grad is None:
            # not computed here this step, maybe elsewhere: take part with zeros
            p.grad = p.data.new(p.size()).zero_()
        name = self._parameter_names.get(p)
        tensor = p.grad
        if tensor.is_sparse:
            if not self.sparse_as_dense:
                return ops.sparse_allreduce_async(tensor, name=name, op=self.op,
                                                  process_set=self.process_set), None
            tensor = tensor.to_dense()
        wire, ctx = self._compression.compress(tensor)
        prescale, postscale = self._scales()
        handle = ops.allreduce_async_(wire, name=name, op=self.op, prescale_factor=prescale,
                                      postscale_factor=postscale, process_set=self.process_set)
        return handle, ctx

    def _grouped_allreduce_grad_async(self, group):
        name = self._parameter_names.get(group[0])
        wired = [self._compression.compress(p.grad) for p in group]
        prescale, postscale = self._scales()
        handle = ops.grouped_allreduce_async_([w for w, _ in wired], name=name, op=self.op,
                                              prescale_factor=prescale,
                                              postscale_factor=postscale,
                                              process_set=self.process_set)
        return handle, [c for _, c in wired]

    def _make_hook(self, p):
        def hook(*_):
            _count_pass(self, p)
            handle, ctx = None, None
            if self._allreduce_delay[p] == 0:
                if self._groups is not None:
                    group = self._p_to_group[p]
                    self._group_counts[group] += 1
                    if self._group_counts[group] == len(group):
                        self._handles[group] = self._grouped_allreduce_grad_async(group)
                        for q in group:
                            self._handles.pop(q, None)
                        self._group_counts[group] = 0
                        return
                else:
                    handle, ctx = self._allreduce_grad_async(p)
            self._handles[p] = (handle, ctx)
        return hook

    def synchronize(self):
        """Waits for every gradient's all-reduce, first starting those whose
        hook did not fire (parameters unused in this step on this rank)."""
        if not self.process_set.included():
            self._synchronized = True
            return
        done = set()
        for key in self._handles:
            done.update(key) if isinstance(key, tuple) else done.add(key)
        for p in self._requires_update - done:
            self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in list(self._handles.items()):
            if handle is None:
                self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in self._handles.items():
            if isinstance(p, tuple):  # a group
                for q, out, c in zip(p, ops.synchronize(handle), ctx):
                    self._allreduce_delay[q] = self.backward_passes_per_step
                    q.grad.set_(self._compression.decompress(out, c))
                self._group_counts[p] = 0
                continue
            out = handle() if callable(handle) else ops.synchronize(handle)
            self._allreduce_delay[p] = self.backward_passes_per_step
            if self._groups is not None:
                self._group_counts[self._p_to_group[p]] = 0
            if p.grad.is_sparse:
                merged = self._compression.decompress(out, ctx)
                p.grad.zero_().add_(merged if merged.is_sparse else merged.to_sparse())
            else:
                p.grad.set_(self._compression.decompress(out, ctx))
        self._handles.clear()
        self._synchronized = True

    @contextmanager
    def skip_synchronize(self):
        """with optimizer.skip_synchronize(): optimizer.step() after an
        explicit synchronize() (gradient clipping), as in Horovod."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(): the gradients are "
                              "all-reduced again. Use the context when you synchronize "
                              "yourself.")
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize()")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


class _DistributedAdasumOptimizer(torch.optim.Optimizer):
    """Horovod's delta optimizer for op=Adasum: each parameter's update of
    one step (the wrapped optimizer's step on that parameter alone, from its
    gradient) is combined across ranks with Adasum and applied to the state
    before the step."""

    _rondo_distributed = True

    def __init__(self, params, named_parameters, compression, backward_passes_per_step,
                 process_set):
        super(self.__class__, self).__init__(params)
        _setup(self, named_parameters, compression, backward_passes_per_step, process_set)
        self._starts = {p: torch.zeros_like(p, requires_grad=False)
                        for p in self._parameter_names}
        if self.process_set.included() and ops.comm_of(process_set).size > 1:
            _agree_parameters(self)
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    p.grad = p.data.new(p.size()).zero_()
                    self._requires_update.add(p)
                    _hook_on(self, p)

    set_backward_passes_per_step = set_backward_passes_per_step

    def _allreduce_grad_async(self, p):
        start = self._starts[p]
        saved = [g["params"] for g in self.param_groups]
        for g in self.param_groups:  # step this parameter alone
            g["params"] = [p] if any(p is q for q in g["params"]) else []
        start.data.copy_(p)
        try:
            super(self.__class__, self).step()
        finally:
            for g, kept in zip(self.param_groups, saved):
                g["params"] = kept
        p.data.sub_(start)  # the update
        wire, ctx = self._compression.compress(p.data)
        return ops.allreduce_async_(wire, name=self._parameter_names.get(p), op=Adasum,
                                    process_set=self.process_set), ctx

    def _make_hook(self, p):
        def hook(*_):
            _count_pass(self, p)
            handle, ctx = None, None
            if self._allreduce_delay[p] == 0:
                handle, ctx = self._allreduce_grad_async(p)
            self._handles[p] = (handle, ctx)
        return hook

    def synchronize(self):
        pass

    @contextmanager
    def skip_synchronize(self):
        raise AssertionError("skip_synchronize() is not supported with the Adasum optimizer")
        yield  # pragma: no cover - a generator for contextmanager

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for p in self._requires_update - set(self._handles):
            self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in list(self._handles.items()):
            if handle is None:
                handle, ctx = self._allreduce_grad_async(p)
            delta = self._compression.decompress(ops.synchronize(handle), ctx)
            start = self._starts[p]
            start.data.add_(delta.data)
            p.data.copy_(start)
            self._allreduce_delay[p] = self.backward_passes_per_step
        self._handles.clear()
        return loss

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step()")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set):
    """Wraps a torch optimizer: gradients are all-reduced (averaged by
    default) over the process set during backward, and step() applies them.
    See the module's text and docs/python.md."""
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor needs op=Average")
    if num_groups != 0:
        warnings.warn("num_groups is deprecated: use groups", DeprecationWarning)
        if groups is None:
            groups = num_groups
    if backward_passes_per_step <= 0:
        raise ValueError("backward_passes_per_step must be > 0")
    base = optimizer.__class__
    if op == Adasum and ops.comm_of(process_set).size > 1:
        cls = type(base.__name__, (base,), dict(_DistributedAdasumOptimizer.__dict__))
        wrapped = cls(optimizer.param_groups, named_parameters, compression,
                      backward_passes_per_step, process_set)
    else:
        cls = type(base.__name__, (base,), dict(_DistributedOptimizer.__dict__))
        wrapped = cls(optimizer.param_groups, named_parameters, compression,
                      backward_passes_per_step, op, gradient_predivide_factor, groups,
                      sparse_as_dense, process_set)
    if optimizer.state:
        wrapped.load_state_dict(optimizer.state_dict())
    return wrapped
