"""Registers PyTorch state with a lifeboat.CheckpointState in one call.

    state = lifeboat.CheckpointState()
    lifeboat.torch.add_module(state, model)           # parameters and buffers
    lifeboat.torch.add_optimizer(state, optimizer)    # e.g. Adam's moments and steps
    handler = lifeboat.PreemptionCheckpointHandler(state, "ckpt", config)

Every tensor is registered by its memory: lifeboat saves it from there and
restores the checkpoint into it in place, so the tensors the module and the
optimizer hold must stay the same objects (assigning `param.data = ...`
afterwards detaches it from the checkpoint). Tensors lifeboat cannot restore
in place are refused with lifeboat.ConfigError.
"""

import torch

from lifeboat import ConfigError


def add_tensor(state, name, tensor):
    """Registers one tensor's memory under `name`."""
    if tensor.layout != torch.strided:
        raise ConfigError(f"tensor '{name}' is {tensor.layout}, not a dense tensor")
    if not tensor.is_contiguous():
        raise ConfigError(f"tensor '{name}' is not contiguous: it cannot be restored in place")
    data = tensor.detach()
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


def add_module(state, module, prefix="model"):
    """Registers a module's parameters and buffers as `prefix/<name>`."""
    for name, tensor in module.named_parameters():
        add_tensor(state, f"{prefix}/{name}", tensor)
    for name, tensor in module.named_buffers():
        add_tensor(state, f"{prefix}/{name}", tensor)


def _adam_state(param, group):
    # torch.optim.Adam's and AdamW's first step, as of torch 1.13: step 0 (a
    # float tensor, on the device when capturable or fused) and zero moments.
    on_device = group.get("capturable", False) or group.get("fused", False)
    if on_device:
        step = torch.zeros((1,), dtype=torch.float, device=param.device)
    else:
        step = torch.tensor(0.)
    state = {"step": step,
             "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
             "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format)}
    if group["amsgrad"]:
        state["max_exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
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
    return {"momentum_buffer": torch.zeros_like(param, memory_format=torch.preserve_format)}


# The optimizers whose state add_optimizer creates before their first step,
# exactly as that step would.
_INITIAL_STATE = {torch.optim.Adam: _adam_state, torch.optim.AdamW: _adam_state,
                  torch.optim.SGD: _sgd_state}


def add_optimizer(state, optimizer, prefix="optimizer"):
    """Registers an optimizer's per-parameter state as `prefix/<group>/<index>/<key>`.

    State the optimizer creates at its first step is created here first, so
    that it exists when lifeboat restores into it; the optimizer then takes
    it as its own and updates it in place.
    """
    create = _INITIAL_STATE.get(type(optimizer))
    for g, group in enumerate(optimizer.param_groups):
        for i, param in enumerate(group["params"]):
            entry = optimizer.state[param]
            if not entry:
                if create is None:
                    raise ConfigError(
                        f"{type(optimizer).__name__} has no state for parameter {i} of group {g} "
                        "yet, and lifeboat.torch cannot create it: register the optimizer after "
                        "its first step")
                entry.update(create(param, group))
            for key, value in entry.items():
                if not isinstance(value, torch.Tensor):
                    raise ConfigError(f"optimizer state '{key}' is a {type(value).__name__}, not a "
                                      "tensor: lifeboat restores tensors in place")
                add_tensor(state, f"{prefix}/{g}/{i}/{key}", value)
