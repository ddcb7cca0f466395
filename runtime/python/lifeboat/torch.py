"""Registers PyTorch state with a lifeboat.CheckpointState in one call.

    state = lifeboat.CheckpointState()
    lifeboat.torch.add_module(state, model)           # parameters and buffers
    lifeboat.torch.add_optimizer(state, optimizer)    # e.g. Adam's moments and steps
    lifeboat.torch.add_scheduler(state, scheduler)    # a learning-rate schedule
    lifeboat.torch.add_grad_scaler(state, scaler)     # mixed precision's loss scale
    lifeboat.torch.add_rng(state)                     # torch's, Python's, NumPy's generators
    handler = lifeboat.PreemptionCheckpointHandler(state, "ckpt", config)

Every tensor is registered by its memory: lifeboat saves it from there and
restores the checkpoint into it in place, so register after the last move
(`model.to(...)`, `.cuda()`, `.half()`, `share_memory()`, an optimizer's
`load_state_dict`, `param.data = ...`). A move after the registration is
found before every save and restore: the handler's construction raises
lifeboat.ConfigError, or the save fails with its message, naming the tensor
(never a checkpoint of memory the model left). Tensors lifeboat cannot
restore in place are refused with lifeboat.ConfigError. So is an optimizer
that trains a parameter no registered tensor holds (as the handler is
constructed), or whose parameters changed after add_optimizer (at the next
save): its training would be in no checkpoint.

State that is no tensor (an optimizer's learning rate and betas, a schedule's
counters, the random generators) is saved through callbacks, as JSON: a
checkpoint restores numbers and strings, never Python objects, so a checkpoint
file that someone else wrote cannot run code in the worker.
"""

import base64
import bisect
import itertools
import json
import random
import weakref

import torch

from lifeboat import ConfigError


# The memory each CheckpointState holds through this module, by state: what
# add_optimizer's check looks its parameters up in.
_REGISTERED = weakref.WeakKeyDictionary()


def _memory(tensor):
    """Where a tensor's bytes are: what lifeboat saves and restores."""
    return tensor.device, tensor.data_ptr(), tensor.numel() * tensor.element_size()


def _registered_ranges(state):
    """The memory registered in `state` through this module, by device: sorted
    (begin, end) address ranges."""
    ranges = {}
    for device, begin, size in _REGISTERED.get(state, ()):
        ranges.setdefault(device, []).append((begin, begin + size))
    for device_ranges in ranges.values():
        device_ranges.sort()
    return ranges


def _check_unmoved(state, registered, current, held):
    """Registers a check, run before every save and restore, that each tensor
    still has the memory registered for it and that no tensor was added:
    `registered` maps names to their memory (_memory) then, `current()` the
    names to the tensors that the state holds now (once per check: 80,000
    lookups of one name each took 0.4 s of every save), `held()` the same
    tensors without names, in the order of `registered`.

    The check compares each tensor's address and element count first,
    unnamed: a move or a replacement gives a tensor other memory, at another
    address, and an added tensor lengthens the list. Only when they differ
    does it look the tensors up by name, with their devices and sizes, to
    name what changed."""
    def unnamed():
        return [(t.data_ptr(), t.numel()) for t in held()]

    expected = unnamed()

    def check():
        if unnamed() == expected:
            return
        now = current()
        for name in now:
            if name not in registered:
                raise ConfigError(
                    f"tensor '{name}' was added to the state after the registration, and "
                    "lifeboat would neither save nor restore it: register the state once it "
                    "holds every tensor it trains with")
        for name, memory in registered.items():
            tensor = now.get(name)
            if tensor is None:
                raise ConfigError(f"tensor '{name}' is no longer in the state it was registered "
                                  "from: register the state after changing it")
            if _memory(tensor) != memory:
                raise ConfigError(
                    f"tensor '{name}' no longer uses the memory registered for it (moved or "
                    "replaced after the registration: .to(), .cuda(), .half(), share_memory(), "
                    "load_state_dict of an optimizer, or an assignment to .data), and lifeboat "
                    "would save and restore the memory it left: register the state after the "
                    "last move, and change a registered tensor in place (copy_(), add_()) "
                    "rather than assigning a new one")
    state.add_check(check)


def add_tensor(state, name, tensor):
    """Registers one tensor's memory under `name`."""
    _check_unmoved(state, {name: _register(state, name, tensor)}, lambda: {name: tensor},
                   lambda: (tensor,))


def _in_memory_order(name, tensor):
    """`tensor` as a contiguous view of its memory, and the name it is
    registered under. A dense tensor whose dimensions lie in memory in
    another order (channels_last: 0, 2, 3, 1) is viewed in that order, and
    the order is part of its name: a checkpoint of one order never restores
    into another as bytes read in the wrong order."""
    if tensor.is_contiguous():
        return tensor, name
    order = sorted(range(tensor.dim()), key=lambda d: -tensor.stride(d))
    permuted = tensor.permute(order)
    if not permuted.is_contiguous():
        raise ConfigError(f"tensor '{name}' is not contiguous in any order of its dimensions "
                          f"(strides {list(tensor.stride())}): it cannot be restored in place")
    return permuted, f"{name} (memory order {','.join(map(str, order))})"


def _register(state, name, tensor):
    """Registers `tensor`'s memory under `name` and returns it (_memory)."""
    if torch.nn.parameter.is_lazy(tensor):
        raise ConfigError(f"tensor '{name}' is not materialized yet (a lazy module's): run a "
                          "forward pass before registering it, so that it has its shape and "
                          "memory")
    if tensor.layout != torch.strided:
        raise ConfigError(f"tensor '{name}' is {tensor.layout}, not a dense tensor")
    data, name = _in_memory_order(name, tensor.detach())
    if data.is_cuda:
        # __cuda_array_interface__ names the device memory; lifeboat refuses it
        # with ConfigError when device support is not compiled in.
        state.add_device_buffer(name, data.reshape(-1).view(torch.uint8))
    elif data.device.type == "cpu":
        # Bytes, whatever the dtype (NumPy has no bfloat16): a view that shares
        # the tensor's memory, as reshape does for a contiguous tensor.
        state.add_buffer(name, data.reshape(-1).view(torch.uint8).numpy())
    else:
        raise ConfigError(f"tensor '{name}' is on {data.device}: lifeboat saves CPU and CUDA "
                          "memory")
    memory = _memory(data)
    _REGISTERED.setdefault(state, []).append(memory)
    return memory


def _plain(value, where):
    """`value` as JSON can hold it: numbers, strings, booleans, None, and
    lists and dicts of them (a tuple as a list, a one-element tensor as its
    number); callables are left out (None), as the object that is restored
    into already has its own. Anything else raises ConfigError."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {str(k): _plain(v, f"{where}.{k}") for k, v in value.items()}
    if callable(value):  # a function, a bound method, a weakref.WeakMethod
        return None
    raise ConfigError(f"{where} is a {type(value).__name__}: lifeboat.torch saves numbers, "
                      "strings and lists of them")


def _merged(current, saved):
    """`current` with the values `saved` holds for it: what _plain left out
    (None in `saved` where `current` holds a callable) stays as it is, and a
    list becomes a tuple where `current` holds one."""
    if isinstance(current, dict) and isinstance(saved, dict):
        return {k: _merged(v, saved[k]) if k in saved else v for k, v in current.items()}
    if isinstance(current, (list, tuple)) and isinstance(saved, list) and \
            len(current) == len(saved):
        merged = [_merged(c, s) for c, s in zip(current, saved)]
        return tuple(merged) if isinstance(current, tuple) else merged
    if saved is None and callable(current):
        return current
    if isinstance(current, torch.Tensor) and current.numel() == 1:
        return torch.full_like(current, saved)
    return saved


def _add_plain(state, name, read, write):
    """Registers the state `read()` returns, restored by `write(saved)`. It is
    read once here, so that state JSON cannot hold fails now, not at a save."""
    _plain(read(), name)
    state.add_callbacks(name, lambda: json.dumps(_plain(read(), name)).encode(),
                        lambda data: write(json.loads(data)))


def _hyperparameters(optimizer):
    return [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]


def _set_hyperparameters(optimizer, saved):
    if len(saved) != len(optimizer.param_groups):
        raise ConfigError(f"the checkpoint has {len(saved)} parameter groups, the optimizer "
                          f"{len(optimizer.param_groups)}")
    for group, values in zip(optimizer.param_groups, saved):
        current = {k: v for k, v in group.items() if k != "params"}
        group.update(_merged(current, values))


def _saved_buffers(module):
    """(name, buffer) for each buffer of `module` that its state_dict holds,
    each tensor once, as named_buffers() names them. A non-persistent buffer
    (register_buffer(..., persistent=False)) is left out, as torch's own
    checkpoints leave it out: it is state the module derives again (a rotary
    embedding's cos/sin cache), often by assigning a new tensor as it grows,
    which would fail the next save as a moved tensor."""
    seen = set()
    for path, owner in module.named_modules():
        for leaf, buffer in owner._buffers.items():
            if buffer is None or leaf in owner._non_persistent_buffers_set or \
                    id(buffer) in seen:
                continue
            seen.add(id(buffer))
            yield (f"{path}.{leaf}" if path else leaf), buffer


def _check_observers(module, prefix):
    """Refuses a quantization observer that has not seen a batch yet where
    its statistics are empty (a per-channel observer's, as quantization-aware
    training's default weight observer keeps them): torch resizes them at the
    first forward pass, which it cannot do to memory lifeboat holds (the pass
    raised "Trying to resize storage that is not resizable")."""
    try:
        from torch.ao.quantization.observer import ObserverBase
    except ImportError:  # a torch without torch.ao
        return
    for path, owner in module.named_modules():
        if not isinstance(owner, ObserverBase):
            continue
        for leaf, buffer in owner._buffers.items():
            if buffer is not None and buffer.numel() == 0:
                raise ConfigError(
                    f"tensor '{prefix}/{path}.{leaf}' is empty until its quantization observer "
                    f"({type(owner).__name__}) sees its first batch, when torch resizes it, "
                    "which it cannot do to memory lifeboat holds: run a forward pass of the "
                    "prepared model before registering it")


def add_module(state, module, prefix="model"):
    """Registers a module's parameters and the buffers its state_dict holds
    (not the non-persistent ones) as `prefix/<name>`. Torch cannot resize a
    registered tensor in place; a quantization-aware model whose observers
    would resize theirs at the first forward pass is refused until after it."""
    _check_observers(module, prefix)

    def tensors():
        return {f"{prefix}/{name}": tensor for name, tensor in
                itertools.chain(module.named_parameters(), _saved_buffers(module))}

    _check_unmoved(state, {name: _register(state, name, tensor)
                           for name, tensor in tensors().items()}, tensors,
                   lambda: itertools.chain(module.parameters(),
                                           (buffer for _, buffer in _saved_buffers(module))))


def _zeros(param):
    return torch.zeros_like(param, memory_format=torch.preserve_format)


def _adam_state(param, group):
    # torch.optim.Adam's and AdamW's first step, as of torch 1.13: step 0 (a
    # float tensor, on the device when capturable or fused) and zero moments.
    on_device = group.get("capturable", False) or group.get("fused", False)
    if on_device:
        step = torch.zeros((1,), dtype=torch.float, device=param.device)
    else:
        step = torch.tensor(0.)
    state = {"step": step, "exp_avg": _zeros(param), "exp_avg_sq": _zeros(param)}
    if group["amsgrad"]:
        state["max_exp_avg_sq"] = _zeros(param)
    return state


def _sgd_state(param, group):
    # SGD's first step with momentum sets the buffer to the gradient; from a
    # zero buffer the first step computes 0 * momentum + gradient, the same
    # values, but only where it does not damp the gradient.
    if group["momentum"] == 0:
        return {}
    if group["dampening"] != 0:
        raise ConfigError("SGD with dampening creates its momentum differently at the first step: "
                          "register the optimizer after it")
    return {"momentum_buffer": _zeros(param)}


def _rmsprop_state(param, group):
    state = {"step": 0, "square_avg": _zeros(param)}
    if group["momentum"] > 0:
        state["momentum_buffer"] = _zeros(param)
    if group["centered"]:
        state["grad_avg"] = _zeros(param)
    return state


def _rprop_state(param, group):
    # Rprop's first step fills its step sizes with the learning rate, in a new
    # tensor shaped as the gradient (contiguous), the real and imaginary parts
    # of a complex one alike.
    lr = group["lr"]
    return {"step": 0, "prev": _zeros(param),
            "step_size": torch.full(param.shape, complex(lr, lr) if param.dtype.is_complex
                                    else lr, dtype=param.dtype, device=param.device)}


# The optimizers whose state add_optimizer creates before their first step,
# exactly as that step would.
_INITIAL_STATE = {torch.optim.Adam: _adam_state, torch.optim.AdamW: _adam_state,
                  torch.optim.SGD: _sgd_state}

# These create theirs as torch 1.13 does; torch 2.0 made their step counts
# tensors, so with another torch they are registered after their first step.
if torch.__version__.startswith("1."):
    _INITIAL_STATE.update({
        torch.optim.RMSprop: _rmsprop_state,
        torch.optim.Adadelta: lambda param, group: {
            "step": 0, "square_avg": _zeros(param), "acc_delta": _zeros(param)},
        torch.optim.Adamax: lambda param, group: {
            "step": torch.tensor(0.), "exp_avg": _zeros(param), "exp_inf": _zeros(param)},
        torch.optim.NAdam: lambda param, group: {
            "step": torch.tensor(0.), "mu_product": torch.tensor(1.),
            "exp_avg": _zeros(param), "exp_avg_sq": _zeros(param)},
        torch.optim.RAdam: lambda param, group: {
            "step": torch.tensor(0.), "exp_avg": _zeros(param), "exp_avg_sq": _zeros(param)},
        torch.optim.ASGD: lambda param, group: {
            "step": torch.tensor(0.), "eta": torch.tensor(group["lr"]),
            "mu": torch.tensor(1.), "ax": _zeros(param)},
        torch.optim.Rprop: _rprop_state,
        torch.optim.SparseAdam: lambda param, group: {
            "step": 0, "exp_avg": _zeros(param), "exp_avg_sq": _zeros(param)},
    })


def _local_optimizer(optimizer):
    """The optimizer that holds this process's per-parameter state: the one
    a ZeroRedundancyOptimizer wraps (its `optim`, over the rank's shard of
    the parameters), else `optimizer` itself."""
    try:
        from torch.distributed.optim import ZeroRedundancyOptimizer
    except ImportError:  # a torch built without distributed support
        return optimizer
    return optimizer.optim if isinstance(optimizer, ZeroRedundancyOptimizer) else optimizer


def add_optimizer(state, optimizer, prefix="optimizer"):
    """Registers an optimizer's per-parameter state as `prefix/<group>/<index>/<key>`,
    and its groups' hyperparameters (learning rate, betas, ...: what a
    schedule or the trainer changes as it goes) as `prefix/param_groups`.

    State the optimizer creates at its first step is created here first, so
    that it exists when lifeboat restores into it; the optimizer then takes
    it as its own and updates it in place. The parameters themselves are the
    model's: register them with add_module or add_tensor (checked as the
    handler is constructed, for every parameter that requires grad).

    A ZeroRedundancyOptimizer keeps only its rank's shard of the state, in
    the optimizer it wraps: that one's state is registered (each rank saves
    its own shard), the hyperparameters are the wrapper's.
    """
    local = _local_optimizer(optimizer)
    create = _INITIAL_STATE.get(type(local))
    registered = {}
    # (group, index, key) of state that is a plain number, as optimizers
    # outside torch keep their step count (transformers' Adafactor): no
    # memory to restore in place, so saved as JSON.
    numbers = []
    for g, group in enumerate(local.param_groups):
        for i, param in enumerate(group["params"]):
            entry = local.state[param]
            if not entry:
                if create is None:
                    raise ConfigError(
                        f"{type(local).__name__} has no state for parameter {i} of group {g} "
                        "yet, and lifeboat.torch cannot create it: register the optimizer after "
                        "its first step")
                entry.update(create(param, group))
            for key, value in entry.items():
                if value is None:  # SGD's momentum_buffer without momentum
                    continue
                if isinstance(value, (bool, int, float)):
                    numbers.append((g, i, key))
                    continue
                if not isinstance(value, torch.Tensor):
                    raise ConfigError(f"optimizer state '{key}' is a {type(value).__name__}, "
                                      "neither a tensor nor a number: lifeboat.torch cannot save "
                                      "it")
                name = f"{prefix}/{g}/{i}/{key}"
                registered[name] = _register(state, name, value)

    # optimizer.state is a defaultdict: a lookup must not add to it. What is
    # no tensor is left out: SGD without momentum stores a momentum_buffer of
    # None at its first step.
    def tensors():
        return {f"{prefix}/{g}/{i}/{key}": value
                for g, group in enumerate(local.param_groups)
                for i, param in enumerate(group["params"])
                for key, value in local.state.get(param, {}).items()
                if isinstance(value, torch.Tensor)}

    def held():
        return (value for group in local.param_groups for param in group["params"]
                for value in local.state.get(param, {}).values()
                if isinstance(value, torch.Tensor))

    # Parameters first: a parameter group added later also adds state, and
    # the group says better what changed.
    _check_parameters(state, local, prefix)
    _check_unmoved(state, registered, tensors, held)
    _add_plain(state, f"{prefix}/param_groups", lambda: _hyperparameters(optimizer),
               lambda saved: _set_hyperparameters(optimizer, saved))
    if numbers:
        _add_numbers(state, local, numbers, f"{prefix}/numbers")


def _add_numbers(state, optimizer, numbers, name):
    """Registers the optimizer state at `numbers` ((group, index, key) each)
    as one list of numbers under `name`."""
    def entry(g, i):
        return optimizer.state[optimizer.param_groups[g]["params"][i]]

    def read():
        return [entry(g, i)[key] for g, i, key in numbers]

    def write(saved):
        if len(saved) != len(numbers):
            raise ConfigError(f"'{name}': the checkpoint holds {len(saved)} numbers of optimizer "
                              f"state, the optimizer {len(numbers)}")
        for (g, i, key), number in zip(numbers, saved):
            entry(g, i)[key] = number

    _add_plain(state, name, read, write)


def _parameters(optimizer):
    return [list(group["params"]) for group in optimizer.param_groups]


def _unregistered(state, groups):
    """(group, index, parameter) of each parameter in `groups` with bytes that
    lies in no tensor registered in `state`."""
    ranges = _registered_ranges(state)
    out = []
    for g, group in enumerate(groups):
        for i, param in enumerate(group):
            device, begin, size = _memory(param)
            held = ranges.get(device, [])
            at = bisect.bisect_right(held, (begin, float("inf")))
            if size > 0 and (at == 0 or begin + size > held[at - 1][1]):
                out.append((g, i, param))
    return out


def _trains_unregistered(prefix, g, i, param, since=""):
    return ConfigError(
        f"optimizer '{prefix}' updates parameter {i} of group {g} (shape {list(param.shape)}, "
        f"{param.dtype}){since}, which no tensor registered with lifeboat.torch holds: "
        "lifeboat would neither save nor restore it, and a restart would train it on from its "
        "initial values. Register the module that holds it (add_module) or the parameter "
        "(add_tensor)")


def _check_parameters(state, optimizer, prefix):
    """Registers a check that `optimizer` still updates the parameters it had
    here (add_optimizer registered their state, and only theirs) and, the
    first time (as the handler is constructed, every tensor registered), that
    each one that trains is itself registered: an optimizer over a whole model
    beside add_module of a part of it, or over a free tensor never registered,
    trained what no checkpoint held. One frozen then (requires_grad False)
    is let through until it trains."""
    registered = _parameters(optimizer)
    frozen = None  # the unregistered parameters frozen at the first check

    def check():
        nonlocal frozen
        now = _parameters(optimizer)
        if [len(g) for g in now] != [len(g) for g in registered] or any(
                p is not q for a, b in zip(now, registered) for p, q in zip(a, b)):
            raise ConfigError(
                f"optimizer '{prefix}' updates other parameters than when it was registered "
                f"(groups of {[len(g) for g in registered]} parameters then, "
                f"{[len(g) for g in now]} now: add_param_group, or a group's parameters "
                "replaced), and lifeboat saves the state of those it had then: register the "
                "optimizer after changing its parameters")
        if frozen is None:
            unheld = _unregistered(state, now)
            for g, i, param in unheld:
                if param.requires_grad:
                    raise _trains_unregistered(prefix, g, i, param)
            frozen = unheld
        for g, i, param in frozen:
            if param.requires_grad:
                raise _trains_unregistered(prefix, g, i, param,
                                           " unfrozen after the handler was constructed")

    state.add_check(check)


def add_scheduler(state, scheduler, prefix="scheduler"):
    """Registers a learning-rate schedule's state (its state_dict: step
    counts, base rates, ...) as `prefix`. The optimizer's own rates are its
    optimizer's, which add_optimizer registers. The functions a schedule
    holds (LambdaLR's, OneCycleLR's annealing) are not saved: the restore
    keeps those of the schedule it restores into, made as the saved one was.
    """
    _add_plain(state, prefix, scheduler.state_dict,
               lambda saved: scheduler.load_state_dict(_merged(scheduler.state_dict(), saved)))


def add_grad_scaler(state, scaler, prefix="grad_scaler"):
    """Registers a mixed-precision loss scaler's state (torch.cuda.amp.GradScaler's
    state_dict: its scale and the count of steps since the scale last
    changed) as `prefix`: without it a resumed run starts from the initial
    scale (65536), skips steps to back it off again, and trains other bits
    than the uninterrupted run. A disabled scaler (no CUDA) saves nothing.
    """
    _add_plain(state, prefix, scaler.state_dict, scaler.load_state_dict)


def _numpy():
    """NumPy, or None where it is not installed (torch runs without it)."""
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def _numpy_rng_state(numpy):
    # The global generator's legacy state: ('MT19937', 624 uint32 keys, the
    # position in them, whether a second Gaussian is cached, and that one).
    kind, keys, position, has_gauss, gauss = numpy.random.get_state(legacy=True)
    return [kind, base64.b64encode(keys.astype("<u4").tobytes()).decode(), int(position),
            int(has_gauss), float(gauss)]


def _set_numpy_rng_state(numpy, saved):
    kind, keys, position, has_gauss, gauss = saved
    numpy.random.set_state((kind, numpy.frombuffer(base64.b64decode(keys), dtype="<u4"),
                            position, has_gauss, gauss))


def _rng_state():
    encode = lambda t: base64.b64encode(t.numpy().tobytes()).decode()  # noqa: E731
    cuda = [encode(s) for s in torch.cuda.get_rng_state_all()] if torch.cuda.is_initialized() \
        else []
    state = {"torch": encode(torch.get_rng_state()), "cuda": cuda, "python": random.getstate()}
    numpy = _numpy()
    if numpy is not None:
        state["numpy"] = _numpy_rng_state(numpy)
    return state


def _set_rng_state(saved):
    decode = lambda text: torch.frombuffer(bytearray(base64.b64decode(text)),  # noqa: E731
                                           dtype=torch.uint8)
    torch.set_rng_state(decode(saved["torch"]))
    if saved["cuda"]:
        torch.cuda.set_rng_state_all([decode(s) for s in saved["cuda"]])
    version, internal, gauss_next = saved["python"]
    random.setstate((version, tuple(internal), gauss_next))
    # Checkpoints written before NumPy's generator was saved have no entry:
    # NumPy's generator then keeps the state the trainer seeded it with.
    numpy = _numpy()
    if numpy is not None and "numpy" in saved:
        _set_numpy_rng_state(numpy, saved["numpy"])


def add_rng(state, prefix="rng"):
    """Registers this process's random generators as `prefix`: torch's (the
    CPU's, and each CUDA device's once CUDA is initialised), Python's
    `random` and NumPy's global one (`numpy.random.*`, where NumPy is
    installed). Dropout and random augmentation draw from them, so a resumed
    run draws what the uninterrupted one drew at the same step. Generators
    the trainer makes itself (a torch.Generator, numpy.random.default_rng())
    are its own to register, with add_callbacks.
    """
    _add_plain(state, prefix, _rng_state, _set_rng_state)
