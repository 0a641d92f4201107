"""The shared training loop on tiny torch modules: skipping, clipping, time limit, patience, best state."""

import copy
import dataclasses
import itertools

import pytest
import torch
from torch import nn

from spanaug.core import training_loop
from spanaug.core.training_loop import LoopSettings, fit

# Tiny models run fastest on one thread: torch's default of one per core makes parallel test workers
# wait on each other's OpenMP barriers (a tiny decode ran 40 times slower on a busy 2-core machine).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _regression(seed: int = 0):
    """A 2->1 linear model and 4 batches of 8 rows of y = x1 - 2 x2."""
    torch.manual_seed(seed)
    model = nn.Linear(2, 1)
    x = torch.randn(32, 2)
    y = x[:, :1] - 2 * x[:, 1:]
    data = [(x[i : i + 8], y[i : i + 8]) for i in range(0, 32, 8)]
    return model, data


def _mse(model):
    return lambda batch: nn.functional.mse_loss(model(batch[0]), batch[1])


def test_trains_and_returns_the_mean_loss_per_epoch():
    model, data = _regression()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    seen = []

    def loss(batch):
        value = _mse(model)(batch)
        seen.append(value.item())
        return value

    result = fit(LoopSettings(epochs=3, progress=False), opt, lambda epoch: data, loss, [model])
    assert [e.epoch for e in result.epochs] == [1, 2, 3] and [e.steps for e in result.epochs] == [4, 4, 4]
    assert result.losses == pytest.approx([sum(seen[i : i + 4]) / 4 for i in (0, 4, 8)])
    assert result.losses[-1] < result.losses[0]
    assert not model.training  # left in eval mode
    assert result.best_epoch is None and not result.stopped_early and not result.stopped_at_time_limit


def test_weighted_losses_and_a_none_loss_skips_the_batch():
    model, data = _regression()
    before = copy.deepcopy(model.state_dict())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    result = fit(LoopSettings(epochs=1, progress=False), opt, lambda epoch: data, lambda batch: None, [model])
    assert result.epochs[0].steps == 0 and result.losses == [0.0]
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # no step taken

    def every_other(batch):  # batches 1 and 3 skipped; 2 weighs 1, 4 weighs 3
        n = next(counter)
        return None if n % 2 == 0 else (torch.tensor(float(n), requires_grad=True), n)

    counter = itertools.count()
    result = fit(LoopSettings(epochs=1, progress=False), opt, lambda epoch: data, every_other, [model])
    assert result.epochs[0].steps == 2 and result.losses == [(1 * 1 + 3 * 3) / 4]


def test_clipping_bounds_the_gradient_norm():
    model, data = _regression()
    norms = []

    class Recording(torch.optim.SGD):
        def step(self, closure=None):
            norms.append(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()])).item())
            return super().step(closure)

    def huge(batch):
        return 1000 * _mse(model)(batch)

    fit(LoopSettings(epochs=1, progress=False), Recording(model.parameters(), lr=0.0), lambda e: data, huge, [model])
    assert min(norms) > 1.0
    norms.clear()
    settings = LoopSettings(epochs=1, progress=False, max_grad_norm=0.5)
    fit(settings, Recording(model.parameters(), lr=0.0), lambda e: data, huge, [model])
    assert len(norms) == 4 and max(norms) == pytest.approx(0.5, rel=1e-4)


def test_scheduler_steps_once_per_optimizer_step():
    model, data = _regression()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1 / (step + 1))
    fit(LoopSettings(epochs=2, progress=False), opt, lambda e: data, _mse(model), [model], scheduler=sched)
    assert sched.last_epoch == 8 and opt.param_groups[0]["lr"] == pytest.approx(1 / 9)


def test_time_limit_stops_after_the_step_that_passes_it(monkeypatch):
    clock = itertools.count()  # each reading of the clock is one second later
    monkeypatch.setattr(training_loop.time, "perf_counter", lambda: float(next(clock)))
    model, data = _regression()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    evaluated = []
    result = fit(
        LoopSettings(epochs=50, progress=False, time_limit_s=20, select_on="score"),
        opt,
        lambda epoch: data,
        _mse(model),
        [model],
        evaluate=lambda epoch: evaluated.append(epoch) or {"score": float(epoch)},
        started=0.0,
    )
    assert result.stopped_at_time_limit and not result.stopped_early
    assert 1 < len(result.epochs) < 50 and result.epochs[-1].steps < 4  # the last epoch was cut short
    assert evaluated == [e.epoch for e in result.epochs]  # the cut epoch is still evaluated


@pytest.mark.parametrize(
    "scores, patience, best, run",
    [
        ([0.2, 0.5, 0.4, 0.3, 0.6, 0.1], 2, 2, 4),  # stops 2 epochs after the best
        ([0.0, 0.0, 0.0, 0.3, 0.2, 0.1], 2, 4, 6),  # a best of 0 (nothing learnt) does not use up patience
        ([0.2, 0.5, 0.4, 0.3, 0.6, 0.1], None, 5, 6),  # no patience: every epoch, still the best kept
    ],
)
def test_patience_stops_and_the_best_state_is_restored(scores, patience, best, run):
    model, data = _regression()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    snapshots = []

    def evaluate(epoch):
        snapshots.append(copy.deepcopy(model.state_dict()))
        return {"score": scores[epoch - 1], "other": 1.0}

    result = fit(
        LoopSettings(epochs=len(scores), progress=False, select_on="score", patience=patience),
        opt,
        lambda epoch: data,
        _mse(model),
        [model],
        evaluate=evaluate,
        state=lambda: copy.deepcopy(model.state_dict()),
        load_state=model.load_state_dict,
    )
    assert (result.best_epoch, len(result.epochs), result.stopped_early) == (best, run, run < len(scores))
    assert result.best_value == scores[best - 1]
    assert [e.evaluation["score"] for e in result.epochs] == scores[:run]
    assert all(torch.equal(v, snapshots[best - 1][k]) for k, v in model.state_dict().items())
    assert best == run or not all(torch.equal(v, snapshots[-1][k]) for k, v in model.state_dict().items())


def test_modules_are_in_train_mode_while_training_and_in_eval_mode_after():
    model, data = _regression()
    dropout = nn.Dropout(0.5)
    modes = []

    def loss(batch):
        modes.append((model.training, dropout.training))
        return _mse(model)(batch)

    def evaluate(epoch):
        model.eval()  # an evaluation sets its own mode; the next epoch puts the modules back in train mode
        return {}

    dropout.eval()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    fit(LoopSettings(epochs=2, progress=False), opt, lambda e: data, loss, [model, dropout], evaluate=evaluate)
    assert modes == [(True, True)] * 8
    assert not model.training and not dropout.training


@dataclasses.dataclass
class _Settings:
    epochs: int = 5
    threads: int = 2
    refit: bool = False


class _Fits:
    """A stand-in ``fit_once`` that records its calls, with the epochs and threads each ran with."""

    def __init__(self):
        self.calls = []

    def __call__(self, train, dev, settings):
        self.calls.append((list(train), list(dev), settings.epochs, torch.get_num_threads()))
        summary = {"epochs_run": settings.epochs, "best_epoch": 3, "total_seconds": 0.1, "n": len(train)}
        return f"model{len(self.calls)}", summary


def _split(items):
    return training_loop.HeldOut(items[2:], items[:2], "held out: the first two")


@pytest.mark.parametrize("refit", [False, True])
def test_the_dev_driver_holds_out_refits_for_the_best_epoch_and_restores_threads(refit):
    fits = _Fits()
    model, summary = training_loop.train_with_dev(
        list(range(10)), None, _Settings(refit=refit), hold_out=_split, fit_once=fits, unit="items", refit_keys=("n",)
    )
    assert fits.calls[0][:3] == (list(range(2, 10)), [0, 1], 5)
    assert fits.calls[0][3] == 2 and torch.get_num_threads() == 1  # the fixture's one thread, restored
    assert summary["dev"] == {"source": "held out: the first two", "items": 2}
    if refit:
        assert fits.calls[1][:3] == (list(range(2, 10)) + [0, 1], [], 3) and model == "model2"
        assert summary["refit"] == {"n": 10, "epochs": 3, "seconds": 0.1}
    else:
        assert len(fits.calls) == 1 and model == "model1" and summary["refit"] is None


def test_a_given_dev_set_is_never_refit():
    fits = _Fits()
    _, summary = training_loop.train_with_dev(
        [1, 2, 3], [4], _Settings(threads=0, refit=True), hold_out=_split, fit_once=fits, unit="items"
    )
    assert len(fits.calls) == 1 and summary["dev"] == {"source": "given", "items": 1} and summary["refit"] is None
