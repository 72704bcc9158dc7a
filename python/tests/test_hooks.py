"""Hook wrap/unwrap, iteration boundaries, and errors: ours contained, the user's unchanged."""

import pickle
import traceback

import pytest
import torch
from torch.optim.optimizer import Optimizer
from torch.utils.data import DataLoader, Dataset, dataloader

from eroica import hooks, log


class Recorder:
    def __init__(self, fail_on=None):
        self.events = []
        self.fail_on = fail_on

    def _record(self, name, *args):
        self.events.append(name)
        if name == self.fail_on:
            raise RuntimeError("listener bug")

    def on_attach(self):
        self._record("attach")

    def on_batch(self, iterator, start_ns):
        self._record("batch")

    def on_epoch_end(self):
        self._record("epoch_end")

    def on_step_end(self, optimizer):
        self._record("step")

    def on_disabled(self):
        self.events.append("disabled")


@pytest.fixture
def recorder():
    rec = Recorder()
    hooks.install(rec)
    yield rec
    hooks.uninstall()


def make_optimizer(cls=torch.optim.SGD):
    p = torch.nn.Parameter(torch.ones(3))
    p.grad = torch.ones(3)
    return cls([p], lr=0.1)


def test_install_wraps_and_uninstall_restores():
    next_before = dataloader._BaseDataLoaderIter.__dict__["__next__"]
    hook_name = next(n for n in ("_patch_step_function", "_hook_for_profile", "__init__")
                     if n in Optimizer.__dict__)
    hook_before = Optimizer.__dict__[hook_name]
    make_optimizer()  # torch wraps SGD.step for its profiler before we are installed
    sgd_before = torch.optim.SGD.__dict__["step"]

    hooks.install(Recorder())
    assert dataloader._BaseDataLoaderIter.__dict__["__next__"] in hooks._wrappers
    assert Optimizer.__dict__[hook_name] is not hook_before
    assert torch.optim.SGD.__dict__["step"] in hooks._wrappers  # pre-existing class wrapped
    assert getattr(torch.optim.SGD.step, "hooked", False)  # torch will not re-wrap us
    hooks.install(Recorder())  # idempotent: no double wrapping
    assert torch.optim.SGD.step.__wrapped__ is sgd_before

    hooks.uninstall()
    assert dataloader._BaseDataLoaderIter.__dict__["__next__"] is next_before
    assert Optimizer.__dict__[hook_name] is hook_before
    assert torch.optim.SGD.__dict__["step"] is sgd_before
    assert not hooks.installed()


def test_one_boundary_per_step_and_batches(recorder):
    opt = make_optimizer(torch.optim.Adam)
    for _ in DataLoader(list(range(6)), batch_size=2):
        opt.step()
    assert recorder.events == ["attach"] + ["batch", "step"] * 3 + ["epoch_end"]


def test_boundary_is_outside_torchs_profiler_label(recorder):
    """Our step wrapper is outermost, so the boundary falls outside Optimizer.step#..."""
    opt = make_optimizer()
    seen = []
    recorder.on_step_end = lambda o: seen.append(torch.autograd._profiler_enabled())
    with torch.autograd.profiler.profile() as prof:
        opt.step()
    names = [e.name for e in prof.function_events]
    assert any(n.startswith("Optimizer.step#SGD.step") for n in names)
    assert seen == [True]
    assert type(opt).step in hooks._wrappers


def test_subclass_overriding_step_counts_once(recorder):
    class Clipped(torch.optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    make_optimizer(torch.optim.SGD)
    opt = make_optimizer(Clipped)
    opt.step()
    opt.step()
    assert recorder.events.count("step") == 2


def test_custom_optimizer_and_lr_scheduler(recorder):
    class Plain(Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):
            return None

    opt = make_optimizer(Plain)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1.0)
    for _ in range(3):
        opt.step()
        sched.step()
    assert recorder.events.count("step") == 3


def test_unpickled_optimizer_is_hooked(recorder):
    opt = pickle.loads(pickle.dumps(make_optimizer(torch.optim.RMSprop)))
    opt.step()
    assert recorder.events.count("step") == 1


class Exploding(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("sample %d is broken" % i)  # line checked by the test
        return i


def test_user_exception_in_dataloader_propagates_unchanged(recorder):
    it = iter(DataLoader(Exploding(), batch_size=1))
    next(it)
    next(it)
    with pytest.raises(KeyError) as info:
        next(it)
    assert info.value.args == ("sample 2 is broken",)
    innermost = traceback.extract_tb(info.value.__traceback__)[-1]
    assert innermost.name == "__getitem__" and "raise KeyError" in innermost.line
    assert recorder.events.count("batch") == 2


class Broken(Optimizer):
    def __init__(self, params, lr):
        super().__init__(params, {"lr": lr})

    def step(self, closure=None):
        raise FloatingPointError("nan in the update")


def test_user_exception_in_step_propagates_unchanged(recorder):
    opt = make_optimizer(Broken)
    with pytest.raises(FloatingPointError) as info:
        opt.step()
    innermost = traceback.extract_tb(info.value.__traceback__)[-1]
    assert innermost.name == "step" and "FloatingPointError" in innermost.line
    assert "step" not in recorder.events
    assert hooks._step_depth == 0  # the nesting count recovered
    torch.optim.SGD.step(make_optimizer())
    assert recorder.events.count("step") == 1


def test_listener_error_disables_eroica_with_one_line(capsys):
    log._said_once.discard("disabled")
    rec = Recorder(fail_on="step")
    hooks.install(rec)
    try:
        opt = make_optimizer()
        for _ in range(3):
            opt.step()  # the user's loop never sees our error
        assert hooks.listener() is None
        assert rec.events == ["attach", "step", "disabled"]
        err = capsys.readouterr().err
        assert err.count("eroica:") == 1 and "disabled" in err and "listener bug" in err
    finally:
        hooks.uninstall()
