#!/usr/bin/python3
"""Records PyTorch 1.13 running a custom torch.autograd.Function, the oracle for
tests/custom/torch_function_test.cpp (which runs the same Function written with
aotgrad::autograd::Function, eagerly and under aot_function with both partitioners).

    /usr/bin/python3 tests/custom/torch_fixture/make_fixture.py

The Function is a straight-through quantizer: forward clamps x * w to [-1, 1] and multiplies by
the sign of w; backward passes the gradient straight through the clamp (the true derivative is
zero outside [-1, 1], so autograd of forward alone would differ) and saves x and w. Writes x.npy,
w.npy, g.npy (the output gradient), y.npy, dx.npy, dw.npy (f64) next to this script.
"""
import os

import numpy as np
import torch


class StraightThroughClamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return torch.clamp(x * w, -1.0, 1.0) * torch.sign(w)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        s = torch.sign(w)
        return g * s * w, g * s * x


def main():
    torch.manual_seed(0)
    here = os.path.dirname(os.path.abspath(__file__))
    x = (torch.randn(3, 4, dtype=torch.float64) * 2).requires_grad_()
    w = torch.randn(4, dtype=torch.float64).requires_grad_()
    g = torch.randn(3, 4, dtype=torch.float64)
    y = StraightThroughClamp.apply(x, w)
    y.backward(g)
    for name, t in dict(x=x, w=w, g=g, y=y, dx=x.grad, dw=w.grad).items():
        np.save(os.path.join(here, name + ".npy"), t.detach().numpy())


if __name__ == "__main__":
    main()
